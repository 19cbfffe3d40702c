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
