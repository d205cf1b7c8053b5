#!/usr/bin/env bash
# Install the Debian 12 packages zkrecipes needs to build, test and demo,
# unless they are already there.  Runs apt-get update once, then install.
# Needs root (or sudo).
set -euo pipefail

PKGS=(gcc make autoconf automake libtool pkg-config
      libzookeeper-mt-dev libjansson-dev libcunit1-dev zookeeper default-jre-headless libuv1-dev)
# ZKR_DEPS_EXTRA adds packages (valgrind for the valgrind run, etc.).
# shellcheck disable=SC2206
PKGS+=(${ZKR_DEPS_EXTRA:-})

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "deps.sh: need root to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
