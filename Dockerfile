# turnlog: one static binary (see cmd/turnlog). docker-compose.yml builds it
# for the workers of the 3-node cluster; `docker build -t turnlog .` alone works too.

# Build stage: the Go toolchain, the module cache, the source.
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo): the runtime image has no libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/turnlog ./cmd/turnlog

# Runtime stage: the binary and CA certificates (for an openai provider over
# HTTPS), nothing else; runs as an unprivileged user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/turnlog /usr/local/bin/turnlog
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/turnlog"]
CMD ["worker"]
