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

# carp_build_target DIR TARGET [cmake args...]: configures DIR and builds
# only TARGET (the demo needs the carpenter binary, not the tests).
carp_build_target() {
  local dir=$1 target=$2
  shift 2
  cmake -S "$CARP_ROOT" -B "$CARP_ROOT/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$CARP_ROOT/$dir" -j "$(nproc)" --target "$target"
}

# carp_debian_kubectl BUILD_DIR: prints the path of Debian 12's kubectl
# (kubernetes-client, 1.20: the oldest kubectl the tests run), kept as
# BUILD_DIR/debian-kubectl/usr/bin/kubectl. When the machine's kubectl is not
# that package's, the package is fetched with apt-get download and unpacked
# there with dpkg-deb -x (nothing is installed).
carp_debian_kubectl() {
  local dir=$1/debian-kubectl
  local bin=$dir/usr/bin/kubectl
  if [ ! -x "$bin" ]; then
    mkdir -p "$1"
    local tmp
    tmp=$(mktemp -d "$1/debian-kubectl.XXXXXX")
    if [ "$(dpkg-query -S /usr/bin/kubectl 2>/dev/null | cut -d: -f1)" = kubernetes-client ]; then
      mkdir -p "$tmp/root/usr/bin"
      ln -s /usr/bin/kubectl "$tmp/root/usr/bin/kubectl"
    else
      if ! (cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null); then
        # no package lists yet (a fresh machine): fetch them once
        local sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo)
        "${sudo[@]}" apt-get update -qq
        (cd "$tmp" && apt-get download -qq kubernetes-client 2>/dev/null) ||
          { rm -rf "$tmp"; echo "carp_debian_kubectl: apt-get download kubernetes-client failed" >&2; return 1; }
      fi
      dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$tmp/root"
    fi
    # a rename, so that a concurrent caller never sees half a tree
    mv -T "$tmp/root" "$dir" 2>/dev/null || true
    rm -rf "$tmp"
  fi
  [ -x "$bin" ] || { echo "carp_debian_kubectl: no $bin" >&2; return 1; }
  echo "$bin"
}

