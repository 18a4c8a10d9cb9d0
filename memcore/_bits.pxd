# See memcore/_tokens.pyx and memcore/_offsets.pyx for the users.
#
# Bit scans shared by the kernels: one definition, compiled to a single instruction
# (bsr/lzcnt, bsf/tzcnt) on GCC/Clang and MSVC.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int memcore_bit_length(unsigned long long x) {
        unsigned long i; return _BitScanReverse64(&i, x) ? (int)i + 1 : 0;
    }
    static inline int memcore_lowest_bit(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int memcore_bit_length(unsigned long long x) {
        return x ? 64 - __builtin_clzll(x) : 0;
    }
    static inline int memcore_lowest_bit(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    """
    int bit_length "memcore_bit_length"(unsigned long long x) noexcept nogil
    int lowest_bit "memcore_lowest_bit"(unsigned long long x) noexcept nogil
