/// Ready jobs by their position in the plan's order: a binary min-heap, so a 100,000-job run
/// picks the next job in O(log n).
struct JobQueue {
    private var heap: [(rank: Int, job: Int)] = []

    var isEmpty: Bool { heap.isEmpty }

    mutating func push(_ job: Int, rank: Int) {
        heap.append((rank, job))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].rank < heap[parent].rank else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Int? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].rank < heap[smallest].rank { smallest = left }
            if right < heap.count && heap[right].rank < heap[smallest].rank { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top.job
    }
}
