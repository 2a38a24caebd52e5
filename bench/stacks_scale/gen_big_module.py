#!/usr/bin/env python3
"""Writes the assembly of a shared object as large as an XLA or jaxlib plugin: N functions
(default 10^6), each with its own symbol (local, in .symtab only, as the hidden symbols of those
libraries end up) and its own FDE in .eh_frame (so .eh_frame and .eh_frame_hdr hold N entries).

Every function has the same 16-byte body: it calls the next function pointer of the array its
argument points to, so a thread given an array [f_a, f_b, ..., pause] sits in pause() below a
chain of frames in this module (bench/stacks_scale/waiter.c builds those chains).

The functions are split over CHUNKS files (chunk_K.s, functions cK_fn_0, cK_fn_1, ...), each
assembled on its own: one file of 10^6 took the assembler 4.5 GB. index.s exports
big_module_chunks (each chunk's first function), big_module_chunk_count and
big_module_per_chunk: function i of chunk K is at big_module_chunks[K] + 16 * i. Each chunk's
text is a gas macro repeated (\\@ numbers the copies), so the files are small.
    gen_big_module.py --functions N --chunks K -o DIR
"""
import argparse
import os

MACRO = r"""
.macro chain_function
  .balign 16
  .type c{chunk}_fn_\@, @function
c{chunk}_fn_\@:
  .cfi_startproc
  push %rbx
  .cfi_adjust_cfa_offset 8
  .cfi_offset %rbx, -16
  mov (%rdi), %rax
  add $8, %rdi
  call *%rax
  pop %rbx
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_endproc
  .size c{chunk}_fn_\@, . - c{chunk}_fn_\@
.endm
"""


def write_chunk(path, chunk, count):
    with open(path, "w") as out:
        out.write("  .text\n")
        out.write(MACRO.format(chunk=chunk))
        out.write(f"  .balign 16\n  .globl big_chunk_{chunk}\n  .hidden big_chunk_{chunk}\nbig_chunk_{chunk}:\n")
        out.write(f"  .rept {count}\n  chain_function\n  .endr\n")
        out.write('  .section .note.GNU-stack,"",@progbits\n')


def write_index(path, chunks, per_chunk):
    with open(path, "w") as out:
        # Data, not code labels: the program reads them through the GOT (no text relocation).
        out.write('  .section .data.rel.ro,"aw"\n  .balign 8\n')
        out.write(f"  .globl big_module_chunks\n  .type big_module_chunks, @object\n"
                  f"  .size big_module_chunks, {8 * chunks}\nbig_module_chunks:\n")
        for chunk in range(chunks):
            out.write(f"  .quad big_chunk_{chunk}\n")
        for name, value in (("big_module_chunk_count", chunks), ("big_module_per_chunk", per_chunk)):
            out.write(f"  .globl {name}\n  .type {name}, @object\n  .size {name}, 8\n{name}:\n  .quad {value}\n")
        out.write('  .section .note.GNU-stack,"",@progbits\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("-o", "--output", required=True, help="directory for chunk_K.s and index.s")
    args = parser.parse_args()
    if args.chunks < 1 or args.functions < args.chunks:
        parser.error("need --chunks >= 1 and --functions >= --chunks")
    per_chunk = args.functions // args.chunks
    os.makedirs(args.output, exist_ok=True)
    for chunk in range(args.chunks):
        write_chunk(os.path.join(args.output, f"chunk_{chunk}.s"), chunk, per_chunk)
    write_index(os.path.join(args.output, "index.s"), args.chunks, per_chunk)


if __name__ == "__main__":
    main()
