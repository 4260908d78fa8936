# tailor in a container: builds the release binary, then runs the demo (a tantivy search
# service on the GCIDE dictionary, compared under five policies on the container's cores).
#
#   docker build -t tailor .
#   docker run --rm -v "$PWD/tailor-demo:/work/tailor-demo" tailor            # the demo
#   docker run --rm tailor load -R 200 -d 10s http://host.docker.internal:8000/
#
# Give the container the cores you want measured (--cpus, --cpuset-cpus): the demo's
# live half measures the cores it sees. Results go to /work/tailor-demo.

FROM rust:1.88-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY examples examples
RUN cargo build --release -p tailor-cli && strip target/release/tailor

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends dict-gcide fonts-dejavu-core ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/tailor /usr/local/bin/tailor
WORKDIR /work
ENTRYPOINT ["tailor"]
CMD ["demo"]
