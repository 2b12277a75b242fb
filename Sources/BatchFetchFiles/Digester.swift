import BatchFetchSpec
import Crypto
import Foundation

/// Which digests a ``Digester`` computes besides sha256: the job's other pinned algorithms, and
/// for a git blob id (`git-sha1`) the size git hashes before the bytes — the job's pinned size,
/// so content of another size (a size mismatch, reported first) gets another id.
package struct DigestAlgorithms: Sendable, Equatable, ExpressibleByArrayLiteral {
    package var also: [Checksum.Algorithm]
    package var blobSize: Int64?

    package init(also: [Checksum.Algorithm], blobSize: Int64? = nil) {
        self.also = also
        self.blobSize = blobSize
    }

    package init(arrayLiteral elements: Checksum.Algorithm...) {
        self.init(also: elements)
    }

    package var isEmpty: Bool { also.isEmpty }
}

/// Computes sha256 (always) and any other digests a job pins, in one pass over the bytes.
/// `@unchecked`: swift-crypto does not mark its hash states `Sendable`, but they are plain
/// value types, so sending a copy is safe.
package struct Digester: @unchecked Sendable {
    private var sha256 = SHA256()
    private var sha512: SHA512?
    private var sha1: Insecure.SHA1?
    private var md5: Insecure.MD5?
    /// A git blob id: sha1 begun with `blob {size}\0` (``DigestAlgorithms/blobSize``).
    private var gitSHA1: Insecure.SHA1?

    package init(also algorithms: DigestAlgorithms = []) {
        if algorithms.also.contains(.sha512) { sha512 = SHA512() }
        if algorithms.also.contains(.sha1) { sha1 = Insecure.SHA1() }
        if algorithms.also.contains(.md5) { md5 = Insecure.MD5() }
        if algorithms.also.contains(.gitSHA1), let size = algorithms.blobSize {
            var blob = Insecure.SHA1()
            blob.update(data: Data("blob \(size)\0".utf8))
            gitSHA1 = blob
        }
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha256.update(bufferPointer: bytes)
        sha512?.update(bufferPointer: bytes)
        sha1?.update(bufferPointer: bytes)
        md5?.update(bufferPointer: bytes)
        gitSHA1?.update(bufferPointer: bytes)
    }

    package mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Lowercase hex digests by algorithm name (`sha256`, `sha512`, `sha1`, `md5`).
    package func finalize() -> [String: String] {
        var result = ["sha256": Self.hex(sha256.finalize())]
        if let sha512 { result["sha512"] = Self.hex(sha512.finalize()) }
        if let sha1 { result["sha1"] = Self.hex(sha1.finalize()) }
        if let md5 { result["md5"] = Self.hex(md5.finalize()) }
        if let gitSHA1 { result["git-sha1"] = Self.hex(gitSHA1.finalize()) }
        return result
    }

    /// Lowercase hex without `String(format:)`, which goes through NSString and showed up in
    /// the profile of 2,000 small downloads.
    package static func hex<D: Digest>(_ digest: D) -> String {
        digest.withUnsafeBytes { hex($0) }
    }

    /// Lowercase hex of `bytes`, written straight into the string's storage: one allocation,
    /// where building it through arrays took four (a digest's iterator copies it into one) and
    /// a small job makes three of these strings.
    package static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            for (index, byte) in bytes.enumerated() {
                text[2 * index] = hexDigit(byte >> 4)
                text[2 * index + 1] = hexDigit(byte & 0x0F)
            }
            return bytes.count * 2
        }
    }

    /// The lowercase hex digit of a value below 16.
    package static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// sha256 of a string's UTF-8 bytes, hex; used to identify URLs without storing them.
    package static func sha256Hex(_ text: String) -> String {
        var text = text
        return text.withUTF8 { hex(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }

    /// Digests of a whole file, read in blocks of at most 4 MiB (bounded memory).
    package static func digests(ofFile path: String, also algorithms: DigestAlgorithms = [],
                               upTo limit: Int64? = nil) throws -> (digests: [String: String], bytes: Int64) {
        var digester = Digester(also: algorithms)
        let bytes = try digester.feed(path: path, upTo: limit)
        return (digester.finalize(), bytes)
    }

    /// Digests of a whole open file, read from offset 0 (the descriptor's offset is untouched).
    package static func digests(ofDescriptor descriptor: Int32, also algorithms: DigestAlgorithms = [],
                               upTo limit: Int64? = nil) throws -> (digests: [String: String], bytes: Int64) {
        var digester = Digester(also: algorithms)
        let bytes = try digester.feed(descriptor: descriptor, upTo: limit)
        return (digester.finalize(), bytes)
    }

    /// Feeds the first `limit` bytes (or all) of a file; returns how many were read.
    @discardableResult
    package mutating func feed(path: String, upTo limit: Int64? = nil) throws -> Int64 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        return try feed(descriptor: descriptor, upTo: limit)
    }

    /// The sha256 of bytes `range` of an open file (a piece of a segmented part).
    package static func sha256(ofDescriptor descriptor: Int32, in range: Range<Int64>) throws -> String? {
        var digester = Digester()
        let read = try digester.feed(descriptor: descriptor, from: range.lowerBound, upTo: range.upperBound)
        return read == range.count ? digester.finalize()["sha256"] : nil
    }

    /// Feeds bytes `start..<limit` (or to the end) of an open file, read with `pread` (and hands
    /// each block to `also`: another digest of the same bytes),
    /// in blocks of 4 MiB, or of the file's size when smaller (a 4 KiB file, or the manifest, is
    /// not worth 4 MiB of heap: glibc serves blocks that size from the heap once it has freed
    /// one, and they stay resident).
    @discardableResult
    package mutating func feed(descriptor: Int32, from start: Int64 = 0, upTo limit: Int64? = nil,
                               also: (UnsafeRawBufferPointer) -> Void = { _ in }) throws -> Int64 {
        var info = stat()
        let size = fstat(descriptor, &info) == 0 ? Int64(info.st_size) : Int64.max
        let blockSize = Int(max(64 << 10, min(4 << 20, limit.map { min($0, size) } ?? size)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = start
        while limit.map({ total < $0 }) ?? true {
            let want = limit.map { min(Int64(blockSize), $0 - total) } ?? Int64(blockSize)
            let got = pread(descriptor, buffer.baseAddress!, Int(want), off_t(total))
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            if got == 0 { break }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            update(bytes)
            also(bytes)
            total += Int64(got)
        }
        return total - start
    }
}
