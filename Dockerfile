# The Coppice server as a container image: a static binary on an empty
# base, running as an unprivileged user, with its data directory at /data.
#
#   docker build -t coppice .        (or: podman build --format docker -t coppice .)
#   docker run -d -p 8080:8080 -v coppice-data:/data -e COPPICE_BOOTSTRAP_KEY=… coppice
#
# deploy/container-test.sh builds this image and checks a running container;
# deploy/image-test.sh (make image-test) runs it where no registry answers,
# on a build-stage base image it makes from the local Go installation.

# The build stage: any image with the Go toolchain of go.mod (and git, for
# the commit `coppice version` shows).
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
# A module proxy other than the image's default, e.g. a company mirror.
ARG GOPROXY
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The commit is stamped when .git is in the build context and readable.
RUN git config --global --add safe.directory /src 2>/dev/null || true; \
    CGO_ENABLED=0 go build -buildvcs=auto -trimpath -tags pebblegozstd -ldflags='-s -w' -o /out/coppice ./cmd/coppice \
    && /out/coppice version \
    && mkdir -p /out/data /out/tmp && chmod 1777 /out/tmp

# The image: the binary, an empty /data owned by the server's user, /tmp.
FROM scratch
COPY --from=build /out/coppice /coppice
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/tmp /tmp
USER 65532:65532
ENV COPPICE_ADDR=0.0.0.0:8080 \
    COPPICE_DATA=/data
EXPOSE 8080
VOLUME ["/data"]
# No shell or curl in the image: the binary asks its own /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/coppice", "healthcheck"]
ENTRYPOINT ["/coppice"]
CMD ["serve"]
