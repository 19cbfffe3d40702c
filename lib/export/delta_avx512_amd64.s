#include "textflag.h"

// AVX-512 twins of delta_amd64.s, four output rows at a time: each row of
// A (and each B' value) is loaded once for the four rows, and a tile of
// 4 rows × 64 columns keeps sixteen independent sums in flight. Every lane
// does exactly what the AVX2 kernels do per lane (the same fused
// multiply-adds in the same order, the same final add or rounding), so the
// output bits do not depend on the kernel (TestAVX512MatchesAVX2).

// FMA4(areg, off) multiplies row k of A at columns off…off+15 (loaded
// into areg) by the four rows' B' values Z28-Z31 into their sums.
#define FMA4(areg, s0, s1, s2, s3) \
	VFMADD231PS areg, Z28, s0 \
	VFMADD231PS areg, Z29, s1 \
	VFMADD231PS areg, Z30, s2 \
	VFMADD231PS areg, Z31, s3

// BCAST4 broadcasts b[k] of the four rows (R12 → rows 0 and 1, R13 → rows
// 2 and 3, BX the row stride) and steps both pointers to k+1.
#define BCAST4 \
	VBROADCASTSS (R12), Z28       \
	VBROADCASTSS (R12)(BX*1), Z29 \
	VBROADCASTSS (R13), Z30       \
	VBROADCASTSS (R13)(BX*1), Z31 \
	ADDQ         $4, R12          \
	ADDQ         $4, R13

// SUMS64(loop) sets Z0-Z15 to the rank sums of four rows (B' at SI,
// row stride BX, r = CX terms) and 64 columns of A (DX, row stride R8,
// from column byte R10): row i's columns in Z(4i)…Z(4i+3), each from zero
// by fused multiply-adds in k order. loop names its rank loop.
#define SUMS64(loop) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	LEAQ (DX)(R10*1), R11 \
	MOVQ SI, R12 \
	LEAQ (SI)(BX*2), R13 \
	MOVQ CX, R15 \
	loop: \
	VMOVUPS (R11), Z20 \
	VMOVUPS 64(R11), Z21 \
	VMOVUPS 128(R11), Z22 \
	VMOVUPS 192(R11), Z23 \
	BCAST4 \
	FMA4(Z20, Z0, Z4, Z8, Z12) \
	FMA4(Z21, Z1, Z5, Z9, Z13) \
	FMA4(Z22, Z2, Z6, Z10, Z14) \
	FMA4(Z23, Z3, Z7, Z11, Z15) \
	ADDQ R8, R11 \
	DECQ R15 \
	JNZ  loop

// SUMS32(loop) is SUMS64 for 32 columns: Z0-Z1, Z4-Z5, Z8-Z9, Z12-Z13.
#define SUMS32(loop) \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	LEAQ (DX)(R10*1), R11 \
	MOVQ SI, R12 \
	LEAQ (SI)(BX*2), R13 \
	MOVQ CX, R15 \
	loop: \
	VMOVUPS (R11), Z20 \
	VMOVUPS 64(R11), Z21 \
	BCAST4 \
	FMA4(Z20, Z0, Z4, Z8, Z12) \
	FMA4(Z21, Z1, Z5, Z9, Z13) \
	ADDQ R8, R11 \
	DECQ R15 \
	JNZ  loop

// ADDV(sum, mem) sets mem (a v vector) to v + sum, v the first operand as
// in the scalar row[j] += d[j].
#define ADDV(sum, mem) \
	VMOVUPS mem, Z16       \
	VADDPS  sum, Z16, Z16  \
	VMOVUPS Z16, mem

// func addRows4AVX512(v *float32, ldv int, b, a *float32, r, in, n int)
// v[i·ldv + j] += Σ_k b[i·r + k]·a[k·in + j] for rows i < 4 and j < n (n
// a multiple of 32): each sum from zero by fused multiply-adds in k order,
// then added to v.
TEXT ·addRows4AVX512(SB), NOSPLIT, $0-56
	MOVQ v+0(FP), DI
	MOVQ ldv+8(FP), AX
	MOVQ b+16(FP), SI
	MOVQ a+24(FP), DX
	MOVQ r+32(FP), CX
	MOVQ in+40(FP), R8
	MOVQ n+48(FP), R9
	SHLQ $2, AX
	SHLQ $2, R8
	SHLQ $2, R9
	MOVQ CX, BX
	SHLQ $2, BX
	XORQ R10, R10

strip64:
	LEAQ 256(R10), R11
	CMPQ R11, R9
	JGT  strip32
	SUMS64(k64)
	LEAQ (DI)(R10*1), R11
	LEAQ (R11)(AX*2), R14
	ADDV(Z0, (R11))
	ADDV(Z1, 64(R11))
	ADDV(Z2, 128(R11))
	ADDV(Z3, 192(R11))
	ADDV(Z4, (R11)(AX*1))
	ADDV(Z5, 64(R11)(AX*1))
	ADDV(Z6, 128(R11)(AX*1))
	ADDV(Z7, 192(R11)(AX*1))
	ADDV(Z8, (R14))
	ADDV(Z9, 64(R14))
	ADDV(Z10, 128(R14))
	ADDV(Z11, 192(R14))
	ADDV(Z12, (R14)(AX*1))
	ADDV(Z13, 64(R14)(AX*1))
	ADDV(Z14, 128(R14)(AX*1))
	ADDV(Z15, 192(R14)(AX*1))
	ADDQ $256, R10
	JMP  strip64

strip32:
	CMPQ R10, R9
	JGE  done
	SUMS32(k32)
	LEAQ (DI)(R10*1), R11
	LEAQ (R11)(AX*2), R14
	ADDV(Z0, (R11))
	ADDV(Z1, 64(R11))
	ADDV(Z4, (R11)(AX*1))
	ADDV(Z5, 64(R11)(AX*1))
	ADDV(Z8, (R14))
	ADDV(Z9, 64(R14))
	ADDV(Z12, (R14)(AX*1))
	ADDV(Z13, 64(R14)(AX*1))
	ADDQ $128, R10
	JMP  strip32

done:
	VZEROUPPER
	RET

DATA r16round<>+0(SB)/4, $0x00007fff
DATA r16one<>+0(SB)/4, $0x00000001
DATA r16abs<>+0(SB)/4, $0x7fffffff
DATA r16inf<>+0(SB)/4, $0x7f800000
DATA r16quiet<>+0(SB)/4, $0x00000040
GLOBL r16round<>(SB), RODATA|NOPTR, $4
GLOBL r16one<>(SB), RODATA|NOPTR, $4
GLOBL r16abs<>(SB), RODATA|NOPTR, $4
GLOBL r16inf<>(SB), RODATA|NOPTR, $4
GLOBL r16quiet<>(SB), RODATA|NOPTR, $4

// WIDEN(mem, z) loads sixteen bfloat16 values as float32.
#define WIDEN(mem, z) \
	VPMOVZXWD mem, z \
	VPSLLD    $16, z, z

// ROUND16(z, mem) rounds the float32 lanes of z to bfloat16 (nearest
// even, NaN kept and made quiet) and stores them at mem: Z24-Z27 hold the
// constants one, 0x7fff, abs mask and infinity, Z19 the quiet bit; Z16-Z18
// and K1 are scratch.
#define ROUND16(z, mem) \
	VPSRLD     $16, z, Z16        \
	VPANDD     Z24, Z16, Z17      \
	VPADDD     Z25, z, Z18        \
	VPADDD     Z17, Z18, Z18      \
	VPSRLD     $16, Z18, Z18      \
	VPANDD     Z26, z, Z17        \
	VPCMPGTD   Z27, Z17, K1       \
	VPORD      Z19, Z16, Z16      \
	VMOVDQA32  Z16, K1, Z18       \
	VPMOVDW    Z18, mem

// func mergeRows4BF16AVX512(dst, src *byte, b, a *float32, r, in, n int)
// dst[i·in + j] = bf16(src[i·in + j] + Σ_k b[i·r + k]·a[k·in + j]) for rows
// i < 4 and j < n (n a multiple of 64): each base value widened, the rank
// terms added in k order by fused multiply-adds, one rounding, as
// mergeRowBF16 does one row at a time.
TEXT ·mergeRows4BF16AVX512(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ b+16(FP), AX
	MOVQ a+24(FP), DX
	MOVQ r+32(FP), CX
	MOVQ in+40(FP), R8
	MOVQ n+48(FP), R9
	SHLQ $2, R8            // A's row stride in bytes
	SHLQ $2, R9
	MOVQ CX, BX
	SHLQ $2, BX            // B' row stride in bytes
	MOVQ R8, R15
	SHRQ $1, R15           // a bfloat16 row's stride in bytes
	VPBROADCASTD r16one<>(SB), Z24
	VPBROADCASTD r16round<>(SB), Z25
	VPBROADCASTD r16abs<>(SB), Z26
	VPBROADCASTD r16inf<>(SB), Z27
	VPBROADCASTD r16quiet<>(SB), Z19
	XORQ R10, R10          // column offset in A (float32 bytes)
	XORQ R14, R14          // column offset in the rows (bfloat16 bytes)

mstrip:
	CMPQ R10, R9
	JGE  mdone
	LEAQ (SI)(R14*1), R11
	WIDEN((R11), Z0)
	WIDEN(32(R11), Z1)
	WIDEN(64(R11), Z2)
	WIDEN(96(R11), Z3)
	WIDEN((R11)(R15*1), Z4)
	WIDEN(32(R11)(R15*1), Z5)
	WIDEN(64(R11)(R15*1), Z6)
	WIDEN(96(R11)(R15*1), Z7)
	LEAQ (R11)(R15*2), R11
	WIDEN((R11), Z8)
	WIDEN(32(R11), Z9)
	WIDEN(64(R11), Z10)
	WIDEN(96(R11), Z11)
	WIDEN((R11)(R15*1), Z12)
	WIDEN(32(R11)(R15*1), Z13)
	WIDEN(64(R11)(R15*1), Z14)
	WIDEN(96(R11)(R15*1), Z15)
	LEAQ (DX)(R10*1), R11
	MOVQ AX, R12
	LEAQ (AX)(BX*2), R13
	MOVQ CX, SI            // the rank count (src is re-derived below)

mk:
	VMOVUPS (R11), Z20
	VMOVUPS 64(R11), Z21
	VMOVUPS 128(R11), Z22
	VMOVUPS 192(R11), Z23
	BCAST4
	FMA4(Z20, Z0, Z4, Z8, Z12)
	FMA4(Z21, Z1, Z5, Z9, Z13)
	FMA4(Z22, Z2, Z6, Z10, Z14)
	FMA4(Z23, Z3, Z7, Z11, Z15)
	ADDQ R8, R11
	DECQ SI
	JNZ  mk
	MOVQ src+8(FP), SI
	LEAQ (DI)(R14*1), R11
	ROUND16(Z0, (R11))
	ROUND16(Z1, 32(R11))
	ROUND16(Z2, 64(R11))
	ROUND16(Z3, 96(R11))
	ROUND16(Z4, (R11)(R15*1))
	ROUND16(Z5, 32(R11)(R15*1))
	ROUND16(Z6, 64(R11)(R15*1))
	ROUND16(Z7, 96(R11)(R15*1))
	LEAQ (R11)(R15*2), R11
	ROUND16(Z8, (R11))
	ROUND16(Z9, 32(R11))
	ROUND16(Z10, 64(R11))
	ROUND16(Z11, 96(R11))
	ROUND16(Z12, (R11)(R15*1))
	ROUND16(Z13, 32(R11)(R15*1))
	ROUND16(Z14, 64(R11)(R15*1))
	ROUND16(Z15, 96(R11)(R15*1))
	ADDQ $256, R10
	ADDQ $128, R14
	JMP  mstrip

mdone:
	VZEROUPPER
	RET

DATA fq_low7<>+0(SB)/4, $0x0000007f
DATA fq_signbyte<>+0(SB)/4, $0x00000080
DATA fq_rebias20<>+0(SB)/4, $0x3c000000
DATA fq_tiny<>+0(SB)/4, $0x3b000000
DATA fq_eight<>+0(SB)/4, $0x00000008
DATA fq_nanbits<>+0(SB)/4, $0x7fc00000
GLOBL fq_low7<>(SB), RODATA|NOPTR, $4
GLOBL fq_signbyte<>(SB), RODATA|NOPTR, $4
GLOBL fq_rebias20<>(SB), RODATA|NOPTR, $4
GLOBL fq_tiny<>(SB), RODATA|NOPTR, $4
GLOBL fq_eight<>(SB), RODATA|NOPTR, $4
GLOBL fq_nanbits<>(SB), RODATA|NOPTR, $4

// FP8CONSTS loads what DECADD needs (after the rank loop, whose
// registers it reuses): Z17 0x7f, Z18 0x80, Z19 the exponent rebias,
// Z24 2^-9, Z25 8, Z26 the NaN bits, Z20 the block's scale, Z21 the
// magnitude mask.
#define FP8CONSTS \
	VPBROADCASTD fq_low7<>(SB), Z17      \
	VPBROADCASTD fq_signbyte<>(SB), Z18  \
	VPBROADCASTD fq_rebias20<>(SB), Z19  \
	VPBROADCASTD fq_tiny<>(SB), Z24      \
	VPBROADCASTD fq_eight<>(SB), Z25     \
	VPBROADCASTD fq_nanbits<>(SB), Z26   \
	VBROADCASTSS s+32(FP), Z20           \
	VPBROADCASTD r16abs<>(SB), Z21

// DECADD(sum, codes, mem) sets mem to the value of the sixteen E4M3 codes
// at codes times the scale (lib/quant's decoder, lane for lane), plus
// sum, and raises Z27 to the magnitudes' bits.
#define DECADD(sum, codes, mem) \
	VPMOVZXBD codes, Z16        \
	VPANDD    Z17, Z16, Z22     \
	VPANDD    Z18, Z16, Z16     \
	VPSLLD    $24, Z16, Z16     \
	VPSLLD    $20, Z22, Z23     \
	VPADDD    Z19, Z23, Z23     \
	VCVTDQ2PS Z22, Z28          \
	VMULPS    Z24, Z28, Z28     \
	VPCMPUD   $1, Z25, Z22, K1  \
	VMOVDQA32 Z28, K1, Z23      \
	VPCMPEQD  Z17, Z22, K2      \
	VMOVDQA32 Z26, K2, Z23      \
	VPORD     Z16, Z23, Z23     \
	VMULPS    Z20, Z23, Z23     \
	VADDPS    sum, Z23, Z23     \
	VMOVUPS   Z23, mem          \
	VPANDD    Z21, Z23, Z28     \
	VPMAXUD   Z28, Z27, Z27

// func fp8AddRows4AVX512(v *float32, ldv int, codes *byte, ldc int, s float32, b, a *float32, r, in, n int) uint32
// v[i·ldv + j] = FP8(codes[i·ldc + j])·s + Σ_k b[i·r + k]·a[k·in + j] for
// rows i < 4 and j < n (n a multiple of 32): addRows4AVX512 onto the
// decoded FP8 values without storing them first; returns the largest
// magnitude written, as float32 bits.
TEXT ·fp8AddRows4AVX512(SB), NOSPLIT, $0-84
	MOVQ v+0(FP), DI
	MOVQ ldv+8(FP), AX
	MOVQ b+40(FP), SI
	MOVQ a+48(FP), DX
	MOVQ r+56(FP), CX
	MOVQ in+64(FP), R8
	MOVQ n+72(FP), R9
	SHLQ $2, AX
	SHLQ $2, R8
	SHLQ $2, R9
	MOVQ CX, BX
	SHLQ $2, BX
	XORQ R10, R10
	VPXORD Z27, Z27, Z27

fstrip64:
	LEAQ 256(R10), R11
	CMPQ R11, R9
	JGT  fstrip32
	SUMS64(fk64)
	FP8CONSTS
	MOVQ codes+16(FP), R12
	MOVQ ldc+24(FP), R13
	MOVQ R10, R15
	SHRQ $2, R15
	ADDQ R15, R12
	LEAQ (R12)(R13*2), R15
	LEAQ (DI)(R10*1), R11
	LEAQ (R11)(AX*2), R14
	DECADD(Z0, (R12), (R11))
	DECADD(Z1, 16(R12), 64(R11))
	DECADD(Z2, 32(R12), 128(R11))
	DECADD(Z3, 48(R12), 192(R11))
	DECADD(Z4, (R12)(R13*1), (R11)(AX*1))
	DECADD(Z5, 16(R12)(R13*1), 64(R11)(AX*1))
	DECADD(Z6, 32(R12)(R13*1), 128(R11)(AX*1))
	DECADD(Z7, 48(R12)(R13*1), 192(R11)(AX*1))
	DECADD(Z8, (R15), (R14))
	DECADD(Z9, 16(R15), 64(R14))
	DECADD(Z10, 32(R15), 128(R14))
	DECADD(Z11, 48(R15), 192(R14))
	DECADD(Z12, (R15)(R13*1), (R14)(AX*1))
	DECADD(Z13, 16(R15)(R13*1), 64(R14)(AX*1))
	DECADD(Z14, 32(R15)(R13*1), 128(R14)(AX*1))
	DECADD(Z15, 48(R15)(R13*1), 192(R14)(AX*1))
	ADDQ $256, R10
	JMP  fstrip64

fstrip32:
	CMPQ R10, R9
	JGE  fdone
	SUMS32(fk32)
	FP8CONSTS
	MOVQ codes+16(FP), R12
	MOVQ ldc+24(FP), R13
	MOVQ R10, R15
	SHRQ $2, R15
	ADDQ R15, R12
	LEAQ (R12)(R13*2), R15
	LEAQ (DI)(R10*1), R11
	LEAQ (R11)(AX*2), R14
	DECADD(Z0, (R12), (R11))
	DECADD(Z1, 16(R12), 64(R11))
	DECADD(Z4, (R12)(R13*1), (R11)(AX*1))
	DECADD(Z5, 16(R12)(R13*1), 64(R11)(AX*1))
	DECADD(Z8, (R15), (R14))
	DECADD(Z9, 16(R15), 64(R14))
	DECADD(Z12, (R15)(R13*1), (R14)(AX*1))
	DECADD(Z13, 16(R15)(R13*1), 64(R14)(AX*1))
	ADDQ $128, R10
	JMP  fstrip32

fdone:
	VMOVDQA32     Z27, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUD       Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0xb1, X0, X1
	VPMAXUD       X1, X0, X0
	VMOVD         X0, AX
	MOVL          AX, ret+80(FP)
	VZEROUPPER
	RET
