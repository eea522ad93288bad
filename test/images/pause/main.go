package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

func main() {
	out := flag.String("o", "", "where to write the pause binary (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: pause -o FILE")
		os.Exit(2)
	}
	if runtime.GOARCH != "amd64" {
		if err := portable(*out); err != nil {
			fmt.Fprintln(os.Stderr, "pause:", err)
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(*out, elf(amd64Code), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
}

// portable builds the Go stand-in test/images/pause/portable (by its
// import path, from anywhere in the module) to out, for an
// architecture with no machine code here: a static binary with the Go
// runtime's threads. The go tool is the toolchain that built this program
// (go run's), else the one on PATH.
func portable(out string) error {
	root := runtime.GOROOT() //nolint:staticcheck // the toolchain that built this; "" under -trimpath without GOROOT set
	goTool := filepath.Join(root, "bin", "go")
	if _, err := os.Stat(goTool); root == "" || err != nil {
		onPath, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("no machine code for %s, and no go tool to build test/images/pause/portable: %w", runtime.GOARCH, err)
		}
		goTool = onPath
	}
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "github.com/minikubelet/minikubelet/test/images/pause/portable")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("no machine code for %s, and building test/images/pause/portable failed: %w", runtime.GOARCH, err)
	}
	return nil
}

// The executable's layout: the ELF header, two program headers (the code's
// segment, and PT_GNU_STACK so that the stack is not executable), then the
// code, all in the one segment loaded at base.
const (
	base       = 0x400000
	ehdrSize   = 64
	phdrSize   = 56
	phdrCount  = 2
	codeOffset = ehdrSize + phdrCount*phdrSize
)

// elf returns a static x86-64 Linux executable that runs code, which must
// be position-independent, from its first byte.
func elf(code []byte) []byte {
	le := binary.LittleEndian
	b := make([]byte, codeOffset, codeOffset+len(code))
	// e_ident: magic, 64-bit, little-endian, version 1, System V ABI.
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0})
	le.PutUint16(b[16:], 2)               // e_type: ET_EXEC
	le.PutUint16(b[18:], 62)              // e_machine: EM_X86_64
	le.PutUint32(b[20:], 1)               // e_version
	le.PutUint64(b[24:], base+codeOffset) // e_entry
	le.PutUint64(b[32:], ehdrSize)        // e_phoff
	le.PutUint64(b[40:], 0)               // e_shoff: no sections
	le.PutUint32(b[48:], 0)               // e_flags
	le.PutUint16(b[52:], ehdrSize)        // e_ehsize
	le.PutUint16(b[54:], phdrSize)        // e_phentsize
	le.PutUint16(b[56:], phdrCount)       // e_phnum
	le.PutUint16(b[58:], 64)              // e_shentsize
	le.PutUint16(b[60:], 0)               // e_shnum
	le.PutUint16(b[62:], 0)               // e_shstrndx
	size := uint64(codeOffset + len(code))
	load := b[ehdrSize:]
	le.PutUint32(load[0:], 1)       // p_type: PT_LOAD
	le.PutUint32(load[4:], 4|1)     // p_flags: PF_R|PF_X
	le.PutUint64(load[8:], 0)       // p_offset
	le.PutUint64(load[16:], base)   // p_vaddr
	le.PutUint64(load[24:], base)   // p_paddr
	le.PutUint64(load[32:], size)   // p_filesz
	le.PutUint64(load[40:], size)   // p_memsz
	le.PutUint64(load[48:], 0x1000) // p_align
	stack := b[ehdrSize+phdrSize:]
	le.PutUint32(stack[0:], 0x6474e551) // p_type: PT_GNU_STACK
	le.PutUint32(stack[4:], 4|2)        // p_flags: PF_R|PF_W
	le.PutUint64(stack[48:], 16)        // p_align
	return append(b, code...)
}
