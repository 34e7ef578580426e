"""The arena's persistent part as memplace reports it, and the host runtime's arena rule.

The target's figures come from TensorFlow Lite Micro's allocator rules (`allocator.py`).
`estimate_arena` is the rule the tests hold against the `tflite-micro` package's 64-bit host
runtime: the persistent part it measured plus the larger of the planned part and what the
runtime needs while it plans (one allocation record per tensor and scratch buffer, the
greedy planner's bookkeeping per planned buffer, the kernels' scratch requests).
"""

from __future__ import annotations

from dataclasses import dataclass

from memplace.importers.tflite import Graph, round_up
from memplace.tflm.scratch import Scratches

# Planning records, by the word size: AllocationInfo, ScratchBufferRequest, and one size_t
# per subgraph; the greedy planner's per_buffer_size() is 40 on both.
ALLOCATION_RECORD = {32: 24, 64: 32}
SCRATCH_REQUEST = {32: 12, 64: 16}
SUBGRAPH_OFFSET = {32: 4, 64: 8}
PLANNER_RECORD = 40
REQUESTS_PER_OP = 12  # kMaxScratchBuffersPerOp


@dataclass(frozen=True)
class Persistent:
    """The persistent part on the target, how it was found, the operators whose kernels
    keep data memplace does not know, and the margin the arena carries for what it does
    not know (those kernels' data, unmodelled scratch)."""

    bytes: int
    basis: str
    unknown: tuple[str, ...] = ()
    margin: int = 0


def estimate_arena(
    graph: Graph, asked: Scratches, activations: int, persistent: int, word_bits: int = 64
) -> int:
    """The arena for a runtime of `word_bits` with this persistent part."""
    records = len(graph.tensors) + len(asked.buffers)
    planned = sum(1 for t in graph.tensors if t.in_arena) + len(asked.buffers)
    requests = (len(asked.buffers) + REQUESTS_PER_OP) * SCRATCH_REQUEST[word_bits]
    temporary = records * ALLOCATION_RECORD[word_bits] + planned * PLANNER_RECORD + requests
    temporary += graph.subgraphs * SUBGRAPH_OFFSET[word_bits]
    return round_up(persistent + max(activations, round_up(temporary)))
