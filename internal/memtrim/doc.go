// Package memtrim gives back the pages of the agent's own binary that only
// its start-up needed.
//
// A Go binary's text, read-only data and pclntab are file-backed mappings.
// Start-up (the packages' init functions, building every part, the first
// syncs) touches pages all over them, and the kernel maps what it touches
// in 64 KiB runs (fault-around) on top of 128 KiB read-ahead: measured on
// this agent idle with no pod, 22 MiB of the binary were resident while
// only 3.5 MiB of it were referenced in the minute after. Those pages stay
// mapped, and counted in the agent's RSS, until memory runs short.
//
// PageOut asks the kernel to reclaim them now (madvise MADV_PAGEOUT on the
// binary's read-only mappings, Linux 5.4 and later): pages that no other
// process maps leave the page cache too, so the memory really comes back,
// and what the agent still runs is read back on its next use. Writable
// mappings (.data, .bss) and anonymous memory are never touched. A page
// another process maps stays in memory for it, but leaves this process's
// page tables (MADV_DONTNEED): it costs this process nothing until it runs
// that code again, when the page is mapped back from the page cache. Loop does it once start-up
// is over, then now and then, and once things are quiet after the agent
// has been busy (Activity), so that RSS follows what the agent uses.
//
// Each pass also advises the mappings MADV_RANDOM, so that what comes back
// after it comes back a page at a time: otherwise each fault on a page no
// longer cached reads 128 KiB around it, and fault-around maps 64 KiB of
// what is cached, so that a function run again brings its neighbours back
// with it. Measured in node mode (make bench), a minute after a batch
// with 110 pods running: 18.9 MiB of the binary resident without, 12.5
// with; 19.1 and 15.0 at 60 pods at steady state. The price is more,
// smaller reads for the code the agent runs again after a pass, once.
// Start-up, before the first pass, keeps the kernel's read-around.
//
// Nothing enters the package but the clock; it leaves a log line per pass.
package memtrim
