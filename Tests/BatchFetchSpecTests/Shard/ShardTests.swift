import BatchFetchSpec
import Testing

/// `--shard K/N`, the shard's own file names, and `--shard auto` from each scheduler's environment.
@Suite struct ShardTests {
    @Test func kOfNParsesWithinRangeAndSaysWhatIsWrongOtherwise() throws {
        let shard = try Shard.parse("2/8").get()
        #expect(shard.index == 2 && shard.count == 8 && shard.description == "2/8")
        #expect(throws: ShardError.self) { try Shard.parse("8/8").get() }
        #expect(throws: ShardError.self) { try Shard.parse("-1/8").get() }
        #expect(throws: ShardError.self) { try Shard.parse("0/0").get() }
        #expect(throws: ShardError.self) { try Shard.parse("1of4").get() }
        #expect(throws: ShardError.self) { try Shard.parse("1/4/2").get() }
        guard case .failure(let error) = Shard.parse("4/4") else { Issue.record("4/4 parsed"); return }
        #expect(error.description.contains("0 to 3 (shards are numbered from 0)"))
    }

    @Test func aShardsFilesCarryItsTagBeforeTheExtension() {
        let shard = Shard(index: 3, count: 16)!
        #expect(shard.fileName("batchfetch-report.json") == "batchfetch-report.shard-3-of-16.json")
        #expect(shard.fileName(".batchfetch.lock") == ".batchfetch.shard-3-of-16.lock")
        #expect(shard.fileName(".batchfetch-state.json") == ".batchfetch-state.shard-3-of-16.json")
        for name in ToolFiles.all { #expect(ToolFiles.isShardFile(shard.fileName(name)), "\(name)") }
        #expect(!ToolFiles.isShardFile("batchfetch-report.json"))
        #expect(!ToolFiles.isShardFile("batchfetch-report.shard-x-of-4.json"))
        #expect(!ToolFiles.isShardFile("batchfetch-report.shard-1-of-.json"))
        #expect(!ToolFiles.isShardFile("data/batchfetch-report.shard-1-of-4.json"))
    }

    @Test func autoPrefersBatchfetchShardThenKubernetesThenSlurm() throws {
        let slurm = ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"]
        let kubernetes = ["JOB_COMPLETION_INDEX": "1"]
        let found = try ShardEnvironment.resolve(slurm.merging(kubernetes) { a, _ in a }.merging(["BATCHFETCH_SHARD": "0/2"]) { a, _ in a },
                                                 count: 3).get()
        #expect(found.shard == Shard(index: 0, count: 2) && found.source == "BATCHFETCH_SHARD=0/2")
        let pod = try ShardEnvironment.resolve(slurm.merging(kubernetes) { a, _ in a }, count: 3).get()
        #expect(pod.shard == Shard(index: 1, count: 3) && pod.source.contains("Kubernetes"))
        let task = try ShardEnvironment.resolve(slurm, count: 3).get()
        #expect(task.shard == Shard(index: 2, count: 4), "Slurm's own count wins over --shard-count")
        #expect(throws: ShardError.self) { try ShardEnvironment.resolve([:], count: 4).get() }
    }

    @Test func kubernetesNeedsTheCountFromTheCommandLineOrTheManifest() throws {
        guard case .failure(let error) = ShardEnvironment.resolve(["JOB_COMPLETION_INDEX": "3"], count: nil) else {
            Issue.record("an index without a count made a shard")
            return
        }
        #expect(error.description.contains("--shard-count"))
        #expect(throws: ShardError.self) { try ShardEnvironment.resolve(["JOB_COMPLETION_INDEX": "4"], count: 4).get() }
        #expect(try ShardEnvironment.resolve(["JOB_COMPLETION_INDEX": "3"], count: 4).get().shard == Shard(index: 3, count: 4))
    }

    @Test func slurmArraysCountFromTheirMinimumInTheirStep() throws {
        func resolve(_ task: Int, min: Int, max: Int, step: Int?, count: Int) -> Result<Shard, ShardError> {
            var environment = ["SLURM_ARRAY_TASK_ID": "\(task)", "SLURM_ARRAY_TASK_MIN": "\(min)",
                               "SLURM_ARRAY_TASK_MAX": "\(max)", "SLURM_ARRAY_TASK_COUNT": "\(count)"]
            environment["SLURM_ARRAY_TASK_STEP"] = step.map(String.init)
            return ShardEnvironment.resolve(environment, count: nil).map(\.shard)
        }
        // --array=1-8
        #expect(try resolve(1, min: 1, max: 8, step: 1, count: 8).get() == Shard(index: 0, count: 8))
        #expect(try resolve(8, min: 1, max: 8, step: nil, count: 8).get() == Shard(index: 7, count: 8))
        // --array=0-14:2
        #expect(try resolve(6, min: 0, max: 14, step: 2, count: 8).get() == Shard(index: 3, count: 8))
        // --array=1,4,5 is no range: no guess.
        #expect(throws: ShardError.self) { try resolve(4, min: 1, max: 5, step: 1, count: 3).get() }
        #expect(throws: ShardError.self) {
            try ShardEnvironment.resolve(["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0"], count: 4).get()
        }
    }
}
