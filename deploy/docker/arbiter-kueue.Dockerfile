# arbiter-kueue, a static Go binary on an empty image: explain, what-if, and check, the controller
# of Kueue's arbiter.dev/time-aware AdmissionCheck (deploy/README.md, "Kueue: arbiter-kueue").
# Build from the repository root:
#   docker build -f deploy/docker/arbiter-kueue.Dockerfile -t arbiter/arbiter-kueue:0.1.0 .
# (CI does not build this image: see deploy/README.md.)
FROM golang:1.26-bookworm AS build
WORKDIR /src/clients/go
COPY clients/go/go.mod clients/go/go.sum ./
RUN go mod download
COPY clients/go/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/arbiter-kueue ./cmd/arbiter-kueue

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/arbiter-kueue /arbiter-kueue
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/arbiter-kueue"]
