"""Stack hints written inside a board or workload file, under `stack_hints:`.

The key takes a list; each item is what a stack hints file holds (`memplace:
stack_hints/v1` may be left out, the file it sits in is versioned already):

```yaml
stack_hints:
  - indirect_calls:
      - {caller: dispatch, targets: [op_add, op_mul]}
    recursion:
      - {function: walk_tree, depth: 12}
```

Each item is read by `memplace.verify.hints`, the reader of hints files, so the two cannot
drift apart; its errors keep the position in this file and the whole key
(`stack_hints[0].recursion[0].depth`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memplace.source import Node

if TYPE_CHECKING:
    from memplace.verify.hints import StackHints


def read_stack_hints(node: Node | None) -> tuple[StackHints, ...]:
    """The hint sets of a `stack_hints:` list (none when the key is absent)."""
    # verify imports the board through the project; importing it here, when a file
    # is read, keeps the import graph free of cycles.
    from memplace.verify.hints import VERSION, StackHints

    if node is None:
        return ()
    hints = []
    for item in node.elements():
        if not isinstance(item.value, dict):
            raise item.error(
                "a stack hints entry is a mapping of indirect_calls, recursion, alloca "
                "and frames, as in a stack hints file"
            )
        data = {"memplace": VERSION, **item.value}
        hints.append(StackHints.from_document(item.doc.part(item.path, data)))
    return tuple(hints)
