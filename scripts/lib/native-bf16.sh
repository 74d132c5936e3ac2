# Sourced by scripts/test.sh: whether
# hedge's `auto` convolution precision takes bf16 here, decided as
# hedge_embed::config::cpu_has_native_bf16 decides it: the CPU has AVX512-BF16 or AMX-BF16, and
# oneDNN's ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) does not cap it below AVX512_CORE_BF16
# (which is also how a newer CPU tests as an AVX2 one). Without them bf16 is emulated, about
# ten times slower than f32.
#
#   if native_bf16; then ...; fi

native_bf16() {
    grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo || return 1
    local isa="${ONEDNN_MAX_CPU_ISA:-${DNNL_MAX_CPU_ISA:-ALL}}"
    case "${isa^^}" in
    ALL | AVX512_CORE_*BF16* | AVX512_CORE_*FP16* | AVX512_CORE_*AMX* | AVX10*) return 0 ;;
    *) return 1 ;;
    esac
}
