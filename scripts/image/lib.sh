# shellcheck shell=bash
# Shared by the image scripts (sourced, not run): which container engine to use and how.
#
# Docker where a Docker engine answers; otherwise podman (daemonless, as root). Override with
# CONTAINER_ENGINE=docker|podman. podman runs containers with runc (crun refuses hybrid cgroup
# v1/v2 hosts) and with nofile/nproc limits no higher than a container host commonly allows:
# a container can not raise a limit above the host's, and the defaults ask for more.

image_engine() {
  if [ -n "${CONTAINER_ENGINE:-}" ]; then
    echo "$CONTAINER_ENGINE"
    return
  fi
  # `docker` may be podman's docker shim: that is podman, with podman's flags
  if command -v docker >/dev/null 2>&1 \
    && ! docker --version 2>/dev/null | grep -qi podman \
    && timeout 15 docker info >/dev/null 2>&1; then
    echo docker
    return
  fi
  if command -v podman >/dev/null 2>&1; then
    echo podman
    return
  fi
  echo "no container engine: start a Docker engine or install podman (apt-get install podman buildah runc)" >&2
  return 1
}

# Flags every `podman build`/`podman run` gets here (see above); none for docker.
image_engine_flags() {
  case "$1" in
    podman) echo "--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024" ;;
    *) echo "" ;;
  esac
}
