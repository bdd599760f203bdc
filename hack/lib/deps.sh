# Sourced by hack/*.sh: installs the Debian packages Carpenter needs when any is
# missing, and builds the tree into a build directory. Safe to run twice.

CARP_DEBS=(build-essential cmake pkg-config git python3 openssl curl
  golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev
  libuv1-dev libcurl4-openssl-dev libyajl-dev libyaml-dev libssl-dev
  libcmocka-dev libhttp-parser-dev prometheus clang-format)

# carp_install_debs PACKAGE...: installs those of the packages that are
# missing (apt-get, with sudo when not root).
carp_install_debs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# carp_install_deps: everything the build, the tests and the demo need. A
# kubectl already on the PATH is kept; without one, Debian's
# kubernetes-client (kubectl 1.20) is installed.
carp_install_deps() {
  local debs=("${CARP_DEBS[@]}")
  command -v kubectl >/dev/null || debs+=(kubernetes-client)
  carp_install_debs "${debs[@]}"
}

# carp_build DIR [cmake args...]
carp_build() {
  local dir=$1
  shift
  cmake -S "$CARP_ROOT" -B "$CARP_ROOT/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$CARP_ROOT/$dir" -j "$(nproc)"
}
