#if canImport(Glibc)
    import Glibc
#endif

/// The C allocator's settings for commands that simulate many runs one after another.
enum HeapTuning {
    /// Keeps freed memory in the process instead of handing it back to the kernel after every run.
    ///
    /// By default glibc serves blocks from 128 KiB up (a card's photo, its reassembly buffer) with
    /// fresh mappings and trims the top of the heap whenever 128 KiB or more of it is free. A
    /// simulator that builds and drops whole devices each run then pays a page fault for every page
    /// of those buffers, every run: a tenth of the time of an exchange with 256 KiB photos
    /// (PERFORMANCE.md). Blocks up to 4 MiB now come from the heap, and up to 64 MiB of free heap
    /// stays mapped. Only the simulating commands call this; `share` keeps the defaults. Elsewhere
    /// than glibc it does nothing.
    static func keepFreedMemory() {
        #if canImport(Glibc)
            // `mallopt` is declared in <malloc.h>, which the Glibc module leaves out: look it up.
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            // glibc's parameter numbers (<malloc.h>): M_MMAP_THRESHOLD -3, M_TRIM_THRESHOLD -1.
            _ = mallopt(-3, 4 << 20)
            _ = mallopt(-1, 64 << 20)
        #endif
    }
}
