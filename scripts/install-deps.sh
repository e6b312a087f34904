#!/usr/bin/env bash
# Installs the Debian (bookworm) packages LLMPrism needs to build, test and run. Idempotent, no prompts.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config file dpkg-dev
  qt6-base-dev qt6-base-dev-tools libqt6charts6-dev libqt6svg6-dev libqt6opengl6-dev libgl-dev
  libboost-dev libboost-graph-dev nlohmann-json3-dev zlib1g-dev libsqlite3-dev sqlite3 libbenchmark-dev libcli11-dev
  xvfb xauth
  libpcap-dev libssl-dev libcurl4-openssl-dev tshark
  clickhouse-server
  nfdump softflowd tzdata
  help2man lintian
  tesseract-ocr tesseract-ocr-eng
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
