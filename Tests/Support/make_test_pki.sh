#!/bin/sh
# Makes a throwaway PKI in DIR for the TLS tests, valid for two days:
#   ca.pem/ca.key            the private CA
#   server.pem/.key          for 127.0.0.1, 127.0.0.2 and localhost, signed by the CA
#   wronghost.pem/.key       for other.example only, signed by the CA
#   selfsigned.pem/.key      for 127.0.0.1, signed by nobody
#   client.pem/.key          a client certificate signed by the CA
#   cadir/                   the CA in a hashed directory, for SSL_CERT_DIR
set -eu
dir="$1"
mkdir -p "$dir/cadir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 2 -subj "/CN=batchfetch test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

sign() {
  name=$1 san=$2 usage=$3
  key "$name.key"
  openssl req -new -key "$name.key" -out "$name.csr" -subj "/CN=$name"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\n' "$san" "$usage" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" -days 2 \
    -extfile "$name.ext" 2>/dev/null
}
sign server "IP:127.0.0.1,IP:127.0.0.2,DNS:localhost" serverAuth
sign wronghost "DNS:other.example" serverAuth
sign client "DNS:client" clientAuth

key selfsigned.key
openssl req -x509 -new -key selfsigned.key -out selfsigned.pem -days 2 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1"

cp ca.pem cadir/
openssl rehash cadir >/dev/null 2>&1 || c_rehash cadir >/dev/null
