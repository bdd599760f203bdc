#!/usr/bin/env bash
# Makes throw-away TLS material for tests with the openssl command line:
#   ca.pem/ca.key          a self-signed CA
#   server.pem/server.key  signed by the CA, for 127.0.0.1, ::1 and localhost
#   wrong.pem/wrong.key    signed by the CA, for wrong.example only
#   client.pem/client.key  signed by the CA, CN=carpenter-test-client,
#                          for client authentication
#   server.spki            the server key's pin: "sha256//<base64>"
#   server.fp, wrong.fp    the certificates' SHA-256 fingerprints,
#                          "AA:BB:...", as Proxmox VE shows them
# Keys are P-256 (fast to make). Usage: mkcerts.sh DIR
set -euo pipefail
dir=${1:?usage: mkcerts.sh DIR}
mkdir -p "$dir"
cd "$dir"

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
  -out "$1" 2>/dev/null; }

newkey ca.key
openssl req -x509 -new -key ca.key -sha256 -days 2 -subj "/CN=carpenter-test-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem 2>/dev/null

# sign NAME CN EXTENSIONS
sign() {
  local name=$1 cn=$2 ext=$3
  newkey "$name.key"
  openssl req -new -key "$name.key" -subj "/CN=$cn" -out "$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -sha256 -days 2 -extfile "$name.ext" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

sign server 127.0.0.1 "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
sign wrong wrong.example "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:wrong.example"
sign client carpenter-test-client "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
rm -f ca.srl

printf 'sha256//%s\n' "$(openssl x509 -in server.pem -noout -pubkey |
  openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary |
  openssl base64 -A)" >server.spki
for name in server wrong; do
  openssl x509 -in $name.pem -noout -fingerprint -sha256 |
    sed 's/^[^=]*=//' >$name.fp
done
