# Sourced by the scripts of this directory, whose arguments are OLD_BIN NEW_BIN OUT_DIR.
old=$1 new=$2 out=$3
mkdir -p "$out"
# run NAME BIN SHAPE [ARGS...]: one broker run of SHAPE, its report in $out/NAME.
run() {
  local name=$1 bin=$2 shape=$3
  shift 3
  target/release/regina-bench run "$shape" --target broker --duration 20 --regina-bin "$bin" \
    "$@" --out "$out/$name" > "$out/$name.log" 2>&1
}
# pair NAME I SHAPE [ARGS...]: the build before ($old), then this one ($new).
pair() {
  local name=$1 i=$2
  shift 2
  run "$name-before-$i" "$old" "$@"
  run "$name-busy-$i" "$new" "$@"
}
