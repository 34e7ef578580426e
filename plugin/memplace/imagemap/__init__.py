"""The image-map stage, between the planner and the generator: where every image of a
project puts its bytes (per image: its regions, its slice of each memory images share, its
vector table, its copy and release tables; and the mailbox of released cores), computed
once from the board, the plan and, only where images share a memory, measured sizes.

`codegen.render` formats it; the project keeps it (`IMAGE_MAP`); `verify` reads it back.
"""

from memplace.imagemap.compute import (
    IMAGE_ALIGN,
    image_holders,
    image_map,
    mailbox,
    pool_owner,
    pool_storage,
    shared_image_memories,
    storage_bytes,
)
from memplace.imagemap.model import (
    CoreMap,
    FreeSection,
    ImageMap,
    Mailbox,
    Region,
    Release,
    ReleaseTable,
    Slice,
    VectorTable,
)

__all__ = [
    "IMAGE_ALIGN",
    "CoreMap",
    "FreeSection",
    "ImageMap",
    "Mailbox",
    "Region",
    "Release",
    "ReleaseTable",
    "Slice",
    "VectorTable",
    "image_holders",
    "image_map",
    "mailbox",
    "pool_owner",
    "pool_storage",
    "shared_image_memories",
    "storage_bytes",
]
