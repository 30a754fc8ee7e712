# arbiter-k8s, a static Go binary on an empty image. Build from the repository root:
#   docker build -f deploy/docker/arbiter-k8s.Dockerfile -t arbiter/arbiter-k8s:0.1.0 .
# (CI does not build this image: see deploy/README.md.)
FROM golang:1.26-bookworm AS build
WORKDIR /src/clients/go
COPY clients/go/go.mod clients/go/go.sum ./
RUN go mod download
COPY clients/go/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/arbiter-k8s ./cmd/arbiter-k8s

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/arbiter-k8s /arbiter-k8s
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/arbiter-k8s"]
