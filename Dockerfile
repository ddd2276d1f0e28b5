# The gateway binary in a small image: `docker build -t gateway .`
#   hub:    docker run -p 8090:8090 -v hub-data:/data gateway hub serve --data /data --addr 0.0.0.0:8090
#   world:  docker run -p 8080:8080 -v "$PWD/my-world:/world" -e WORLD_ADMIN_KEY=… gateway worlds serve /world --bind 0.0.0.0 --port 8080
#           (beyond loopback the /__world/* admin routes need that key in X-Admin-Key)
# Python 3 is in the runtime image: world handlers, tools and python graders run in
# python3 workers, confined by bubblewrap (docs/SECURITY.md: the container needs user
# namespaces, e.g. `--security-opt seccomp=unconfined` or a profile allowing them).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p gateway-cli && cp target/release/gateway /usr/local/bin/gateway

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 ca-certificates bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --create-home gateway
COPY --from=build /usr/local/bin/gateway /usr/local/bin/gateway
# A numeric user: Kubernetes' runAsNonRoot can check it without the image's /etc/passwd.
USER 10001
WORKDIR /data
EXPOSE 8080 8090
ENTRYPOINT ["/usr/local/bin/gateway"]
CMD ["hub", "serve", "--data", "/data", "--addr", "0.0.0.0:8090"]
