"""The arena a 32-bit Cortex-M target needs, estimated.

The persistent part holds the runtime's records (one `TfLiteEvalTensor` per tensor, one
node record per operator, full tensor records for the graph's inputs and outputs), the
kernels' data (quantisation multipliers and shifts per output channel, options), the
variable tensors and the allocator's own objects. From a host measurement, the target's
is the host's with the pointer-made records and the unlisted objects halved (pointers are
4 bytes there, not 8); without one, a rule from the model (`estimate_persistent`).

While the runtime prepares the model it also needs, above the persistent part, room for
its planning records: one allocation record per tensor and scratch buffer, the greedy
planner's bookkeeping per planned buffer and the kernels' scratch requests. The arena is
the persistent part plus the larger of the planned part and that temporary need.
"""

from __future__ import annotations

from dataclasses import dataclass

from memplace.tflm.graph import Graph, round_up
from memplace.tflm.runtime import Measured
from memplace.tflm.scratch import Scratches

# Bytes on a 32-bit target (TFLite Micro with TF_LITE_STATIC_MEMORY).
EVAL_TENSOR = 12
NODE = 32
TENSOR_RECORD = 40
KERNEL_DATA = 64  # an operator's own data, beside its per-channel arrays
ALLOCATOR_OBJECTS = 512
SUBGRAPH_RECORD = 12  # SubgraphAllocations: a subgraph's node and tensor arrays
# Planning records, by the target's word size: AllocationInfo, ScratchBufferRequest, and
# one size_t per subgraph; the greedy planner's per_buffer_size() is 40 on both.
ALLOCATION_RECORD = {32: 24, 64: 32}
SCRATCH_REQUEST = {32: 12, 64: 16}
SUBGRAPH_OFFSET = {32: 4, 64: 8}
PLANNER_RECORD = 40
REQUESTS_PER_OP = 12  # kMaxScratchBuffersPerOp
_PER_CHANNEL = {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED"}


@dataclass(frozen=True)
class Persistent:
    """The persistent part on the target, how it was found, the operators whose kernels
    keep data memplace does not know, and the margin the arena carries for what it does
    not know (those kernels' data, unmodelled scratch)."""

    bytes: int
    basis: str
    unknown: tuple[str, ...] = ()
    margin: int = 0


def from_host(graph: Graph, host: Measured) -> Persistent:
    target = host.tail - host.pointers // 2 - host.unlisted // 2
    return Persistent(round_up(target), "from the 64-bit host runtime's measurement")


def estimate_persistent(graph: Graph, asked: Scratches) -> Persistent:
    """A rule from the model, for when no runtime can measure it."""
    ends = sum(1 for t in graph.main_ends if graph.tensors[t].in_arena)
    total = len(graph.tensors) * EVAL_TENSOR + len(graph.operators) * NODE
    total += (graph.subgraphs - 1) * SUBGRAPH_RECORD
    total += ends * TENSOR_RECORD + ALLOCATOR_OBJECTS + 8 * len(asked.buffers)
    for op in graph.operators:
        total += KERNEL_DATA
        if op.kind in _PER_CHANNEL and op.outputs:
            total += 8 * graph.tensors[op.outputs[0]].shape[-1]
    total += sum(round_up(t.bytes) for t in graph.tensors if t.variable)
    return Persistent(round_up(total), "from the model alone (no tflite-micro runtime)")


def estimate_arena(
    graph: Graph, asked: Scratches, activations: int, persistent: int, word_bits: int = 32
) -> int:
    """The arena for a target of `word_bits` (32, or 64 for the host runtime)."""
    records = len(graph.tensors) + len(asked.buffers)
    planned = sum(1 for t in graph.tensors if t.in_arena) + len(asked.buffers)
    requests = (len(asked.buffers) + REQUESTS_PER_OP) * SCRATCH_REQUEST[word_bits]
    temporary = records * ALLOCATION_RECORD[word_bits] + planned * PLANNER_RECORD + requests
    temporary += graph.subgraphs * SUBGRAPH_OFFSET[word_bits]
    return round_up(persistent + max(activations, round_up(temporary)))
