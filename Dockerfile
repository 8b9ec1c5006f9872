# keel-server in a small image. Build from the repository root:
#   docker build -t keel .
#   docker run -p 6379:6379 keel
# Its build is the README's release build of keel-server (the one
# `cargo run --release --bin keel-server` runs).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin keel-server

FROM debian:bookworm-slim
RUN useradd --system --uid 999 --home-dir /data --create-home keel
COPY --from=build /src/target/release/keel-server /usr/local/bin/keel-server
COPY keel.conf /etc/keel/keel.conf
USER keel
WORKDIR /data
EXPOSE 6379
# Listening on every interface inside the container is the point of
# publishing a port; protected mode would refuse every client that is not
# on the container's loopback, so it is off here, as in Redis's image. Set
# requirepass (or ACL users) before exposing the port beyond the host.
ENTRYPOINT ["keel-server", "/etc/keel/keel.conf", "--dir", "/data", "--bind", "0.0.0.0 ::", "--protected-mode", "no"]
