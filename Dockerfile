# syntax=docker/dockerfile:1
# Builds the manager as a static binary and ships it on a distroless base
# that runs as a non-root user (65532, "nonroot").
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/tollgate-dev/tollgate-controller:v0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 ...
ARG GO_VERSION=1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

# The builder runs on the build machine's platform and cross-compiles.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
WORKDIR /workspace
# Dependencies first, so that a source change reuses the module layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only the packages main.go builds from (test/manifests checks the list).
COPY main.go ./
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY hooks/ hooks/
COPY internal/ internal/
COPY webhooks/ webhooks/
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" -o manager .

FROM ${BASE_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="tollgate-controller" \
      org.opencontainers.image.description="Rolls Talos Linux upgrades across Cluster API workload clusters" \
      org.opencontainers.image.source="https://github.com/tollgate-dev/tollgate" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
WORKDIR /
COPY --from=builder /workspace/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
