# arbiter-server and the arbiter CLI on Debian 12, whose gRPC, protobuf, Abseil and
# prometheus-cpp packages the build uses. Build from the repository root:
#   docker build -f deploy/docker/arbiter-server.Dockerfile -t arbiter/arbiter-server:0.1.0 .
# (CI does not build this image: see deploy/README.md.)
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake ninja-build g++ \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
      prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DARBITER_BENCHMARKS=OFF \
 && cmake --build /build --target arbiter-server arbiter

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgrpc++1.51 libgrpc29 libprotobuf32 \
      libabsl20220623 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/arbiter-server /build/bin/arbiter /usr/local/bin/
USER 65532:65532
EXPOSE 50051 9464
ENTRYPOINT ["/usr/local/bin/arbiter-server"]
