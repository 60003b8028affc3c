// The enter/leave/tail-call stubs the JIT calls when `calls` is on (clr_calls.h), Linux x86-64 only.
//
// The JIT's contract for the fast-path hooks of SetEnterLeaveFunctionHooks3 on Unix x64 (dotnet/runtime,
// the JIT's targetamd64.h REG_PROFILER_ENTER_ARG_0/1, and the runtime's own slow-path stubs that get
// the same registers): the enter hook is called from the method's prolog with the mapper's value
// (FunctionIDOrClientID) in r14 and the profiled frame's stack pointer in r15, while the method's
// arguments are still live in rdi, rsi, rdx, rcx, r8, r9 and xmm0-7; the leave and tail-call hooks get
// the value in rdi (the profiled stack pointer in rsi) while the return value is live in rax, rdx,
// xmm0, xmm1. The hook must preserve all of these: it is not a normal call for the JIT.
//
// Each stub keeps a frame-pointer frame (the sampler and our backtraces walk rbp chains), aligns the
// stack to 16 for the C++ call, calls the C++ half with the value in rdi and restores what it saved.
// The enter and tail-call stubs save every caller-saved integer register and xmm0-7; the leave stub
// only what the JIT keeps live across it (its RBM_PROFILER_LEAVE_TRASH on Unix x64: everything but
// the return registers rax, rdx, xmm0, xmm1), the hot path's saving: 26 loads and stores less per call.
#if defined(__x86_64__) && defined(__linux__)

// Frame below the saved rbp: 8 xmm registers (128 bytes) then 9 integer registers (72 bytes), 200
// bytes, aligned down to 16.
#define MLPD_SAVE_BYTES 208

.macro MLPD_ELT_STUB name, target, valuereg
    .text
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    endbr64
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $MLPD_SAVE_BYTES, %rsp
    andq $-16, %rsp
    movdqa %xmm0, 0(%rsp)
    movdqa %xmm1, 16(%rsp)
    movdqa %xmm2, 32(%rsp)
    movdqa %xmm3, 48(%rsp)
    movdqa %xmm4, 64(%rsp)
    movdqa %xmm5, 80(%rsp)
    movdqa %xmm6, 96(%rsp)
    movdqa %xmm7, 112(%rsp)
    movq %rax, 128(%rsp)
    movq %rcx, 136(%rsp)
    movq %rdx, 144(%rsp)
    movq %rsi, 152(%rsp)
    movq %rdi, 160(%rsp)
    movq %r8, 168(%rsp)
    movq %r9, 176(%rsp)
    movq %r10, 184(%rsp)
    movq %r11, 192(%rsp)
    movq \valuereg, %rdi
    call \target
    movdqa 0(%rsp), %xmm0
    movdqa 16(%rsp), %xmm1
    movdqa 32(%rsp), %xmm2
    movdqa 48(%rsp), %xmm3
    movdqa 64(%rsp), %xmm4
    movdqa 80(%rsp), %xmm5
    movdqa 96(%rsp), %xmm6
    movdqa 112(%rsp), %xmm7
    movq 128(%rsp), %rax
    movq 136(%rsp), %rcx
    movq 144(%rsp), %rdx
    movq 152(%rsp), %rsi
    movq 160(%rsp), %rdi
    movq 168(%rsp), %r8
    movq 176(%rsp), %r9
    movq 184(%rsp), %r10
    movq 192(%rsp), %r11
    movq %rbp, %rsp
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size \name, . - \name
.endm

MLPD_ELT_STUB mlpd_clr_enter_stub, mlpd_clr_on_enter, %r14
MLPD_ELT_STUB mlpd_clr_enter_min_stub, mlpd_clr_on_enter_min, %r14
// The leave stub: the return registers only (rdi, the value, is free to be overwritten).
.macro MLPD_LEAVE_STUB name, target
    .text
    .globl \name
    .hidden \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    endbr64
    pushq %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq $48, %rsp
    andq $-16, %rsp
    movdqa %xmm0, 0(%rsp)
    movdqa %xmm1, 16(%rsp)
    movq %rax, 32(%rsp)
    movq %rdx, 40(%rsp)
    call \target
    movdqa 0(%rsp), %xmm0
    movdqa 16(%rsp), %xmm1
    movq 32(%rsp), %rax
    movq 40(%rsp), %rdx
    movq %rbp, %rsp
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size \name, . - \name
.endm

MLPD_LEAVE_STUB mlpd_clr_leave_stub, mlpd_clr_on_leave
MLPD_LEAVE_STUB mlpd_clr_leave_min_stub, mlpd_clr_on_leave_min
MLPD_ELT_STUB mlpd_clr_tailcall_stub, mlpd_clr_on_tailcall, %rdi

#endif

// No executable stack for this object (the linker would otherwise ask for one).
.section .note.GNU-stack,"",%progbits
