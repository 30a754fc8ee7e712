# arbiter-extender, a static Go binary on an empty image: the scheduler extender that runs beside
# kube-scheduler (deploy/README.md, "Extender for kube-scheduler"). Build from the repository root:
#   docker build -f deploy/docker/arbiter-extender.Dockerfile -t arbiter/arbiter-extender:0.1.0 .
# (CI does not build this image: see deploy/README.md.)
FROM golang:1.26-bookworm AS build
WORKDIR /src/clients/go
COPY clients/go/go.mod clients/go/go.sum ./
RUN go mod download
COPY clients/go/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/arbiter-extender ./cmd/arbiter-extender

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/arbiter-extender /arbiter-extender
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["/arbiter-extender"]
