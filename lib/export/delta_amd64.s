#include "textflag.h"

// func deltaColsAVX2(d, b, a *float32, r, in, n int)
// d[j] = Σ_k b[k]·a[k·in + j] for j < n (n a multiple of 32): 32 columns at
// a time in four YMM accumulators, the rank loop innermost.
TEXT ·deltaColsAVX2(SB), NOSPLIT, $0-48
	MOVQ d+0(FP), DI
	MOVQ b+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ r+24(FP), CX
	MOVQ in+32(FP), R8
	MOVQ n+40(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ R10, R10

loopj:
	CMPQ R10, R9
	JGE  done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ (DX)(R10*1), R11
	MOVQ SI, R12
	MOVQ CX, R13

loopk:
	VBROADCASTSS (R12), Y4
	VFMADD231PS  (R11), Y4, Y0
	VFMADD231PS  32(R11), Y4, Y1
	VFMADD231PS  64(R11), Y4, Y2
	VFMADD231PS  96(R11), Y4, Y3
	ADDQ         $4, R12
	ADDQ         R8, R11
	DECQ         R13
	JNZ          loopk
	VMOVUPS      Y0, (DI)(R10*1)
	VMOVUPS      Y1, 32(DI)(R10*1)
	VMOVUPS      Y2, 64(DI)(R10*1)
	VMOVUPS      Y3, 96(DI)(R10*1)
	ADDQ         $128, R10
	JMP          loopj

done:
	VZEROUPPER
	RET

DATA bf16round<>+0(SB)/4, $0x00007fff
DATA bf16one<>+0(SB)/4, $0x00000001
DATA bf16abs<>+0(SB)/4, $0x7fffffff
DATA bf16inf<>+0(SB)/4, $0x7f800000
DATA bf16quiet<>+0(SB)/4, $0x00000040
GLOBL bf16round<>(SB), RODATA|NOPTR, $4
GLOBL bf16one<>(SB), RODATA|NOPTR, $4
GLOBL bf16abs<>(SB), RODATA|NOPTR, $4
GLOBL bf16inf<>(SB), RODATA|NOPTR, $4
GLOBL bf16quiet<>(SB), RODATA|NOPTR, $4

// ROUND rounds the float32 lanes of X to bfloat16 (nearest even, NaN kept
// quiet) in the low half of each lane, using Y10-Y15 as scratch.
#define ROUND(X) \
	VPSRLD     $16, X, Y10    \
	VPAND      Y12, Y10, Y11  \
	VPADDD     Y13, X, Y14    \
	VPADDD     Y11, Y14, Y14  \
	VPSRLD     $16, Y14, Y14  \
	VPAND      Y15, X, Y11    \
	VPCMPGTD   Y9, Y11, Y11   \
	VPOR       Y8, Y10, Y10   \
	VPBLENDVB  Y11, Y10, Y14, X

// func mergeRowBF16(dst, src *byte, b, a *float32, r, in, n int)
// dst[j] = bf16(src[j] + Σ_k b[k]·a[k·in + j]) for j < n (n a multiple of
// 64): the base row widened into eight accumulators (enough independent
// FMAs to hide their latency), the rank loop innermost, one rounding at
// the end.
TEXT ·mergeRowBF16(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), BX
	MOVQ b+16(FP), SI
	MOVQ a+24(FP), DX
	MOVQ r+32(FP), CX
	MOVQ in+40(FP), R8
	MOVQ n+48(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ R10, R10
	XORQ R14, R14

bloopj:
	CMPQ R10, R9
	JGE  bdone
	VPMOVZXWD (BX)(R14*1), Y0
	VPMOVZXWD 16(BX)(R14*1), Y1
	VPMOVZXWD 32(BX)(R14*1), Y2
	VPMOVZXWD 48(BX)(R14*1), Y3
	VPMOVZXWD 64(BX)(R14*1), Y4
	VPMOVZXWD 80(BX)(R14*1), Y5
	VPMOVZXWD 96(BX)(R14*1), Y6
	VPMOVZXWD 112(BX)(R14*1), Y7
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VPSLLD    $16, Y4, Y4
	VPSLLD    $16, Y5, Y5
	VPSLLD    $16, Y6, Y6
	VPSLLD    $16, Y7, Y7
	LEAQ      (DX)(R10*1), R11
	MOVQ      SI, R12
	MOVQ      CX, R13

bloopk:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3
	VFMADD231PS  128(R11), Y8, Y4
	VFMADD231PS  160(R11), Y8, Y5
	VFMADD231PS  192(R11), Y8, Y6
	VFMADD231PS  224(R11), Y8, Y7
	ADDQ         $4, R12
	ADDQ         R8, R11
	DECQ         R13
	JNZ          bloopk
	VPBROADCASTD bf16one<>(SB), Y12
	VPBROADCASTD bf16round<>(SB), Y13
	VPBROADCASTD bf16abs<>(SB), Y15
	VPBROADCASTD bf16inf<>(SB), Y9
	VPBROADCASTD bf16quiet<>(SB), Y8
	ROUND(Y0)
	ROUND(Y1)
	ROUND(Y2)
	ROUND(Y3)
	ROUND(Y4)
	ROUND(Y5)
	ROUND(Y6)
	ROUND(Y7)
	VPACKUSDW    Y1, Y0, Y0
	VPACKUSDW    Y3, Y2, Y2
	VPACKUSDW    Y5, Y4, Y4
	VPACKUSDW    Y7, Y6, Y6
	VPERMQ       $0xD8, Y0, Y0
	VPERMQ       $0xD8, Y2, Y2
	VPERMQ       $0xD8, Y4, Y4
	VPERMQ       $0xD8, Y6, Y6
	VMOVDQU      Y0, (DI)(R14*1)
	VMOVDQU      Y2, 32(DI)(R14*1)
	VMOVDQU      Y4, 64(DI)(R14*1)
	VMOVDQU      Y6, 96(DI)(R14*1)
	ADDQ         $256, R10
	ADDQ         $128, R14
	JMP          bloopj

bdone:
	VZEROUPPER
	RET
