import Crypto
import Foundation
import Testing
import TestOrigin

/// The built binary, killed with SIGKILL in the middle of a download and run again.
@Suite(.serialized) struct ResumeEndToEndTests {
    static let size: Int64 = 32 << 20

    /// Starts a download, SIGKILLs the binary once the part holds half the file, and returns the
    /// part's size at that moment. The origin stops serving a little past half until the kill
    /// (``gateHalfway(_:)``): the run cannot finish between two looks.
    private func killHalfway(_ directory: TemporaryDirectory, origin: TestOrigin) async throws -> Int64 {
        Self.gateHalfway(origin)
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let part = directory.url.appendingPathComponent("data/big.bin.part").path
        let held = await BinaryRunner.signal(SIGKILL, to: process) { BinaryRunner.fileSize(part) >= Self.size / 2 }
        #expect(held, "the process never got there within the timeout")
        await BinaryRunner.exit(of: process)
        #expect(process.terminationReason == .uncaughtSignal)
        Self.openGate(origin)
        return BinaryRunner.fileSize(part)
    }

    /// `/big.bin` serves at most half the file and 6 MiB more (what a sink may still hold in
    /// memory over four connections, and then some) until ``openGate(_:)``.
    private static func gateHalfway(_ origin: TestOrigin) {
        origin.update("/big.bin") {
            $0.pauseAfterServed = Self.size / 2 + (6 << 20)
            $0.paused = true
        }
    }

    private static func openGate(_ origin: TestOrigin) {
        origin.update("/big.bin") { $0.paused = false }
    }

    /// A trickled origin serving `/big.bin` (`size` bytes) and a one-job manifest for it (`job`
    /// adds keys).
    private func setUp(seed: UInt64 = 21, size: Int64 = Self.size, trickle: Int = 16 << 20, job: String = "",
                       server: (inout OriginFile) -> Void = { _ in }) async throws
        -> (TemporaryDirectory, TestOrigin, OriginContent) {
        let origin = try await TestOrigin.start()
        let content = OriginContent.generated(size: size, seed: seed)
        var file = OriginFile(content: content)
        file.trickleBytesPerSecond = trickle
        server(&file)
        origin.serve("/big.bin", file)
        let directory = try TemporaryDirectory()
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            jobs:
              - {id: big, url: "\(origin.url("/big.bin"))"\(job)}
            """)
        return (directory, origin, content)
    }

    @Test func rerunAfterKillTransfersOnlyTheRemainder() async throws {
        let (directory, origin, content) = try await setUp()
        let partSize = try await killHalfway(directory, origin: origin)
        #expect(partSize >= Self.size / 4 && partSize < Self.size)
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("data/big.bin").path))

        origin.update("/big.bin") { $0.trickleBytesPerSecond = nil }
        origin.resetCounters()
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let served = origin.bytesServed("/big.bin")
        let asked = origin.requests("/big.bin").compactMap { $0.header("range") }.compactMap(Self.byteRange)
        try await origin.shutdown()

        #expect(rerun.status == 0, "\(rerun.stderr)")
        // Only the remainder was asked for. (What the origin wrote can exceed it: a transfer
        // URLSession shed for a starved process, asked again from where it stopped, was partly
        // written into socket buffers — so the requests are counted, not the bytes.)
        #expect(served >= Self.size - partSize)
        #expect(!asked.isEmpty && asked.allSatisfy { $0.lowerBound >= partSize }, "\(asked)")
        #expect(Self.covered(asked) == Self.size - partSize)
        let bytes = try Data(contentsOf: directory.url.appendingPathComponent("data/big.bin"))
        #expect(Self.hex(SHA256.hash(data: bytes)) == Self.hex(SHA256.hash(data: content.allBytes)))
        let report = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let job = (report?["jobs"] as? [[String: Any]])?.first
        #expect(job?["resumed_from"] as? Int64 == partSize)
        #expect(job?["http_status"] as? Int == 206)
    }

    /// The file is rewritten with the same size while the run is dead. A server that honours
    /// If-Range answers 200; busybox httpd and twisted.web ignore If-Range and have only
    /// Last-Modified, so they answer 206 with bytes of the new file — which must be refused by
    /// its Last-Modified, not glued onto the old half. Single stream and segmented.
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func remoteChangeAfterKillYieldsTheNewFile(ignoresIfRange: Bool, segmented: Bool) async throws {
        let (directory, origin, old) = try await setUp(
            trickle: segmented ? 3 << 20 : 16 << 20, job: segmented ? ", size: \(Self.size), segments: 4" : "") {
            if ignoresIfRange {
                $0.ignoresIfRange = true
                $0.validators = .lastModifiedOnly
            }
        }
        if segmented {
            Self.gateHalfway(origin)
            let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
            let url = directory.url
            let held = await BinaryRunner.signal(SIGKILL, to: process) { Self.rangesDone(url).reduce(0, { $0 + $1[1] - $1[0] }) >= Self.size / 2 }
            #expect(held, "the process never got there within the timeout")
            await BinaryRunner.exit(of: process)
            Self.openGate(origin)
            #expect(!Self.rangesDone(directory.url).isEmpty)
        } else {
            _ = try await killHalfway(directory, origin: origin)
        }
        let new = OriginContent.generated(size: Self.size, seed: 22)
        origin.replace("/big.bin", with: new)
        origin.update("/big.bin") { $0.trickleBytesPerSecond = nil }
        origin.resetCounters()
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let served = origin.bytesServed("/big.bin")
        let requests = origin.requests("/big.bin").map { "\($0.header("range") ?? "-") \($0.header("if-range") ?? "-")" }
        try await origin.shutdown()

        #expect(rerun.status == 0, "\(rerun.stderr)")
        let digest = Self.hex(SHA256.hash(data: try Data(contentsOf: directory.url.appendingPathComponent("data/big.bin"))))
        #expect(digest == Self.hex(SHA256.hash(data: new.allBytes)))
        #expect(digest != Self.hex(SHA256.hash(data: old.allBytes)))
        // The new file once, plus what was in flight when the stale response was refused (the
        // origin counts what it wrote into socket buffers too: up to about 10 MiB on loopback).
        #expect(served <= Self.size + (12 << 20), "served \(served): \(requests)")
        let report = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let job = (report?["jobs"] as? [[String: Any]])?.first
        // Fetched from byte 0: no resume to report.
        #expect(job?["resumed_from"] == nil)
    }

    /// The bytes a `Range: bytes=first-last` header asks for.
    /// How many distinct bytes `ranges` cover together.
    private static func covered(_ ranges: [Range<Int64>]) -> Int64 {
        var total: Int64 = 0, end: Int64 = .min
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let start = max(range.lowerBound, end)
            if range.upperBound > start { total += range.upperBound - start }
            end = max(end, range.upperBound)
        }
        return total
    }

    /// The bytes a `Range` header asks for; `bytes=N-` runs to the end of the test's file.
    private static func byteRange(_ header: String) -> Range<Int64>? {
        let bounds = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false).map { Int64($0) }
        guard header.hasPrefix("bytes="), bounds.count == 2, let first = bounds[0] else { return nil }
        return first..<((bounds[1] ?? Self.size - 1) + 1)
    }

    /// Bytes the sidecar of a segmented part lists as written.
    private static func rangesDone(_ directory: URL) -> [[Int64]] {
        let sidecar = directory.appendingPathComponent("data/big.bin.part.json")
        guard let data = try? Data(contentsOf: sidecar),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
        return (object["ranges_done"] as? [[Any]])?.map { $0.compactMap { ($0 as? NSNumber)?.int64Value } } ?? []
    }

    @Test func segmentedRerunAfterKillResumesEverySegment() async throws {
        let (directory, origin, content) = try await setUp(seed: 23, trickle: 3 << 20, job: ", size: \(Self.size), segments: 4")
        Self.gateHalfway(origin)
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let url = directory.url
        let held = await BinaryRunner.signal(SIGKILL, to: process) { Self.rangesDone(url).reduce(0, { $0 + $1[1] - $1[0] }) >= Self.size / 2 }
        #expect(held, "the process never got there within the timeout")
        await BinaryRunner.exit(of: process)
        Self.openGate(origin)
        let ranges = Self.rangesDone(directory.url)
        let done = ranges.reduce(0) { $0 + $1[1] - $1[0] }
        #expect(!ranges.isEmpty && done >= Self.size / 2 && done < Self.size)

        origin.update("/big.bin") { $0.trickleBytesPerSecond = nil }
        origin.resetCounters()
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let served = origin.bytesServed("/big.bin")
        let requests = origin.requests("/big.bin")
        try await origin.shutdown()

        #expect(rerun.status == 0, "\(rerun.stderr)")
        // Only the gaps were asked for, each range validated by If-Range (no probe this time), and
        // served about once (the killed run's draining connections no longer count: TestOrigin
        // counts a response only in the counter epoch it began in).
        // (Counted by the requests, not the bytes written: see the test above.)
        #expect(served >= Self.size - done, "served \(served) for \(Self.size - done) missing bytes")
        #expect(requests.allSatisfy { $0.header("range") != nil && $0.header("if-range") != nil })
        let asked = requests.compactMap { $0.header("range") }.compactMap(Self.byteRange)
        #expect(asked.count == requests.count)
        let overlapping = asked.filter { range in ranges.contains { range.overlaps($0[0]..<$0[1]) } }
        #expect(overlapping.isEmpty, "asked again for written bytes: \(overlapping), written: \(ranges)")
        #expect(Self.covered(asked) == Self.size - done, "asked \(asked) for \(Self.size - done) missing bytes")
        let bytes = try Data(contentsOf: directory.url.appendingPathComponent("data/big.bin"))
        #expect(Self.hex(SHA256.hash(data: bytes)) == Self.hex(SHA256.hash(data: content.allBytes)))
        let report = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let job = (report?["jobs"] as? [[String: Any]])?.first
        #expect(job?["resumed_from"] as? Int64 == done)
        #expect(job?["segments"] as? Int == 4)
        // The segments' requests are this run's one attempt (it said `attempts: 0` and no status).
        #expect(job?["attempts"] as? Int == 1 && job?["http_status"] as? Int == 206, "\(job ?? [:])")
    }

    /// `sources: all` over two mirrors (two hosts), SIGKILLed halfway: the sidecar records which
    /// mirror wrote which ranges, and the rerun asks both mirrors for the gaps alone — the first
    /// with the sidecar's validator in `If-Range`, the second with its own once its first 206
    /// named it (the pinned sha256 proves the mix) — and reports both as used.
    @Test func aRunOverTwoMirrorsKilledHalfwayResumesFromBoth() async throws {
        let (directory, first, content) = try await setUp(seed: 29, trickle: 3 << 20)
        let second = try await TestOrigin.start(host: "127.0.0.2")
        var file = OriginFile(content: content)
        file.trickleBytesPerSecond = 3 << 20
        file.version = 2  // its own ETag and Last-Modified
        second.serve("/big.bin", file)
        try directory.write("m.yaml", """
            version: 1
            output_dir: data
            per_host: 2
            jobs:
              - id: big
                urls: ['\(first.url("/big.bin"))', '\(second.url("/big.bin"))']
                size: \(Self.size)
                checksum: sha256:\(Self.hex(SHA256.hash(data: content.allBytes)))
                segments: 4
                sources: all
            """)
        // Each mirror stops a little past a quarter: together they cannot finish before the kill.
        for origin in [first, second] {
            origin.update("/big.bin") {
                $0.pauseAfterServed = Self.size / 4 + (6 << 20)
                $0.paused = true
            }
        }
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let url = directory.url
        let held = await BinaryRunner.signal(SIGKILL, to: process) { Self.rangesDone(url).reduce(0, { $0 + $1[1] - $1[0] }) >= Self.size / 2 }
        #expect(held, "the process never got there within the timeout")
        await BinaryRunner.exit(of: process)
        let ranges = Self.rangesDone(directory.url)
        let done = ranges.reduce(0) { $0 + $1[1] - $1[0] }
        let from = Self.rangesFrom(directory.url)
        #expect(done >= Self.size / 2 && done < Self.size)
        #expect(Set(from.keys) == ["0", "1"] && from.values.allSatisfy { !$0.isEmpty }, "\(from)")
        #expect(from.values.joined().reduce(0) { $0 + $1[1] - $1[0] } == done)

        for origin in [first, second] {
            origin.update("/big.bin") {
                $0.paused = false
                $0.trickleBytesPerSecond = nil
            }
            origin.resetCounters()
        }
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        let (firstRequests, secondRequests) = (first.requests("/big.bin"), second.requests("/big.bin"))
        try await first.shutdown()
        try await second.shutdown()

        #expect(rerun.status == 0, "\(rerun.stderr)")
        let bytes = try Data(contentsOf: directory.url.appendingPathComponent("data/big.bin"))
        #expect(Self.hex(SHA256.hash(data: bytes)) == Self.hex(SHA256.hash(data: content.allBytes)))
        let asked = (firstRequests + secondRequests).compactMap { $0.header("range") }.compactMap(Self.byteRange)
        #expect(asked.count == firstRequests.count + secondRequests.count)
        let overlapping = asked.filter { range in ranges.contains { range.overlaps($0[0]..<$0[1]) } }
        #expect(overlapping.isEmpty, "asked again for written bytes: \(overlapping), written: \(ranges)")
        #expect(Self.covered(asked) == Self.size - done)
        // The first mirror's validator is the sidecar's; the second's is learned per connection.
        #expect(firstRequests.allSatisfy { $0.header("if-range") != nil })
        #expect(secondRequests.filter { $0.header("if-range") == nil }.count <= 2)
        let report = try JSONSerialization.jsonObject(
            with: Data(contentsOf: directory.url.appendingPathComponent("data/batchfetch-report.json"))) as? [String: Any]
        let job = (report?["jobs"] as? [[String: Any]])?.first
        #expect(job?["resumed_from"] as? Int64 == done)
        #expect(job?["mirrors_used"] as? [Int] == [0, 1], "\(job ?? [:])")
    }

    /// Which mirror wrote which bytes, as the sidecar of a multi-mirror part lists them.
    private static func rangesFrom(_ directory: URL) -> [String: [[Int64]]] {
        let sidecar = directory.appendingPathComponent("data/big.bin.part.json")
        guard let data = try? Data(contentsOf: sidecar),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let from = object["ranges_from"] as? [String: [[Any]]] else { return [:] }
        return from.mapValues { $0.map { $0.compactMap { ($0 as? NSNumber)?.int64Value } } }
    }

    /// A small file of known size is written to a part without a name: SIGKILLed in the middle
    /// of its body, the run leaves nothing of it behind (no part, no sidecar, no dest), and a
    /// rerun fetches it whole.
    @Test func aSmallFileKilledMidBodyLeavesNothingBehind() async throws {
        let size: Int64 = 1 << 20
        let (directory, origin, content) = try await setUp(seed: 5, size: size, trickle: 256 << 10, job: ", size: \(size)")
        let process = try BinaryRunner.start(["run", "m.yaml"], in: directory.url)
        let held = await BinaryRunner.signal(SIGKILL, to: process) { origin.bytesServed("/big.bin") >= size / 2 }
        #expect(held, "the process never got there within the timeout")
        await BinaryRunner.exit(of: process)
        let data = directory.url.appendingPathComponent("data")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: data.path)) ?? []

        origin.update("/big.bin") { $0.trickleBytesPerSecond = nil }
        let rerun = try await BinaryRunner.run(["run", "m.yaml"], in: directory.url)
        try await origin.shutdown()

        #expect(process.terminationReason == .uncaughtSignal)
        #expect(left.filter { $0.contains("big.bin") } == [], "left behind: \(left)")
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let bytes = try Data(contentsOf: data.appendingPathComponent("big.bin"))
        #expect(Self.hex(SHA256.hash(data: bytes)) == Self.hex(SHA256.hash(data: content.allBytes)))
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
