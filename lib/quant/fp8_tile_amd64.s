#include "textflag.h"

// Whole-tile twins of fp8_simd.go's loops (sixteen lanes, AVX-512F): the
// same operations per lane, so the same bits (TestFP8TileKernels). Columns
// a multiple of 16; one call per scale block, so the constants are set up
// once per 128×128 block, not once per row.

DATA fq_abs<>+0(SB)/4, $0x7fffffff
DATA fq_signbyte<>+0(SB)/4, $0x00000080
DATA fq_half<>+0(SB)/4, $0x0007ffff
DATA fq_one<>+0(SB)/4, $0x00000001
DATA fq_rebias<>+0(SB)/4, $0x000003c0
DATA fq_subadd<>+0(SB)/4, $0x46800000
DATA fq_subbits<>+0(SB)/4, $0x3c800000
DATA fq_satbits<>+0(SB)/4, $0x43e00000
DATA fq_inf<>+0(SB)/4, $0x7f800000
DATA fq_satcode<>+0(SB)/4, $0x0000007e
DATA fq_nancode<>+0(SB)/4, $0x0000007f
DATA fq_rebias20<>+0(SB)/4, $0x3c000000
DATA fq_tiny<>+0(SB)/4, $0x3b000000
DATA fq_eight<>+0(SB)/4, $0x00000008
DATA fq_nanbits<>+0(SB)/4, $0x7fc00000
GLOBL fq_abs<>(SB), RODATA|NOPTR, $4
GLOBL fq_signbyte<>(SB), RODATA|NOPTR, $4
GLOBL fq_half<>(SB), RODATA|NOPTR, $4
GLOBL fq_one<>(SB), RODATA|NOPTR, $4
GLOBL fq_rebias<>(SB), RODATA|NOPTR, $4
GLOBL fq_subadd<>(SB), RODATA|NOPTR, $4
GLOBL fq_subbits<>(SB), RODATA|NOPTR, $4
GLOBL fq_satbits<>(SB), RODATA|NOPTR, $4
GLOBL fq_inf<>(SB), RODATA|NOPTR, $4
GLOBL fq_satcode<>(SB), RODATA|NOPTR, $4
GLOBL fq_nancode<>(SB), RODATA|NOPTR, $4
GLOBL fq_rebias20<>(SB), RODATA|NOPTR, $4
GLOBL fq_tiny<>(SB), RODATA|NOPTR, $4
GLOBL fq_eight<>(SB), RODATA|NOPTR, $4
GLOBL fq_nanbits<>(SB), RODATA|NOPTR, $4

// func fp8EncodeTileAVX512(dst *byte, ldd int, src *float32, lds, rows, cols int, inv float32)
// dst[i·ldd + j] = FP8Encode(src[i·lds + j]·inv).
TEXT ·fp8EncodeTileAVX512(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	MOVQ rows+32(FP), CX
	MOVQ cols+40(FP), DX
	SHLQ $2, R9
	VBROADCASTSS inv+48(FP), Z20
	VPBROADCASTD fq_abs<>(SB), Z21
	VPBROADCASTD fq_signbyte<>(SB), Z23
	VPBROADCASTD fq_half<>(SB), Z24
	VPBROADCASTD fq_one<>(SB), Z25
	VPBROADCASTD fq_rebias<>(SB), Z26
	VPBROADCASTD fq_subadd<>(SB), Z27
	VPBROADCASTD fq_subbits<>(SB), Z29
	VPBROADCASTD fq_satbits<>(SB), Z30
	VPBROADCASTD fq_inf<>(SB), Z31
	VPBROADCASTD fq_satcode<>(SB), Z19
	VPBROADCASTD fq_nancode<>(SB), Z18
	TESTQ CX, CX
	JLE   edone

erow:
	XORQ AX, AX

ecol:
	VMULPS    (SI)(AX*4), Z20, Z0
	VPANDD    Z21, Z0, Z1
	VPSRLD    $24, Z0, Z2
	VPANDD    Z23, Z2, Z2
	VPSRLD    $20, Z1, Z3
	VPANDD    Z25, Z3, Z3
	VPADDD    Z24, Z1, Z4
	VPADDD    Z3, Z4, Z4
	VPSRLD    $20, Z4, Z4
	VPSUBD    Z26, Z4, Z4
	VADDPS    Z27, Z1, Z5
	VPSUBD    Z27, Z5, Z5
	VPCMPUD   $1, Z29, Z1, K1
	VMOVDQA32 Z5, K1, Z4
	VPCMPUD   $5, Z30, Z1, K2
	VMOVDQA32 Z19, K2, Z4
	VPORD     Z2, Z4, Z4
	VPCMPUD   $6, Z31, Z1, K3
	VMOVDQA32 Z18, K3, Z4
	VPMOVDB   Z4, (DI)(AX*1)
	ADDQ      $16, AX
	CMPQ      AX, DX
	JLT       ecol
	ADDQ      R8, DI
	ADDQ      R9, SI
	DECQ      CX
	JNZ       erow

edone:
	VZEROUPPER
	RET

// func fp8DecodeTileAVX512(dst *float32, ldd int, src *byte, lds, rows, cols int, s float32)
// dst[i·ldd + j] = FP8Values[src[i·lds + j]]·s.
TEXT ·fp8DecodeTileAVX512(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	MOVQ rows+32(FP), CX
	MOVQ cols+40(FP), DX
	SHLQ $2, R8
	VBROADCASTSS s+48(FP), Z20
	VPBROADCASTD fq_nancode<>(SB), Z21
	VPBROADCASTD fq_signbyte<>(SB), Z22
	VPBROADCASTD fq_rebias20<>(SB), Z23
	VPBROADCASTD fq_tiny<>(SB), Z24
	VPBROADCASTD fq_eight<>(SB), Z25
	VPBROADCASTD fq_nanbits<>(SB), Z26
	TESTQ CX, CX
	JLE   ddone

drow:
	XORQ AX, AX

dcol:
	VPMOVZXBD (SI)(AX*1), Z0
	VPANDD    Z21, Z0, Z1
	VPANDD    Z22, Z0, Z2
	VPSLLD    $24, Z2, Z2
	VPSLLD    $20, Z1, Z3
	VPADDD    Z23, Z3, Z3
	VCVTDQ2PS Z1, Z4
	VMULPS    Z24, Z4, Z4
	VPCMPUD   $1, Z25, Z1, K1
	VMOVDQA32 Z4, K1, Z3
	VPCMPEQD  Z21, Z1, K2
	VMOVDQA32 Z26, K2, Z3
	VPORD     Z2, Z3, Z3
	VMULPS    Z20, Z3, Z3
	VMOVUPS   Z3, (DI)(AX*4)
	ADDQ      $16, AX
	CMPQ      AX, DX
	JLT       dcol
	ADDQ      R8, DI
	ADDQ      R9, SI
	DECQ      CX
	JNZ       drow

ddone:
	VZEROUPPER
	RET

// func absMaxTileAVX512(src *float32, lds, rows, cols int) uint32
// The largest of the tile's magnitudes as float32 bits (a NaN's above all).
TEXT ·absMaxTileAVX512(SB), NOSPLIT, $0-36
	MOVQ src+0(FP), SI
	MOVQ lds+8(FP), R9
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), DX
	SHLQ $2, R9
	VPBROADCASTD fq_abs<>(SB), Z21
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JLE   mreduce

mrow:
	XORQ AX, AX

mcol:
	VPANDD  (SI)(AX*4), Z21, Z1
	VPMAXUD Z1, Z0, Z0
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     mcol
	ADDQ    R9, SI
	DECQ    CX
	JNZ     mrow

mreduce:
	VEXTRACTI64X4 $1, Z0, Y1
	VPMAXUD       Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPMAXUD       X1, X0, X0
	VPSHUFD       $0xb1, X0, X1
	VPMAXUD       X1, X0, X0
	VMOVD         X0, AX
	MOVL          AX, ret+32(FP)
	VZEROUPPER
	RET
