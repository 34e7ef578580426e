// The stand-in library: checks what a TFLM application built by memplace hands it.
#include <string.h>

#include <new>

#include "tensorflow/lite/micro/micro_interpreter.h"

namespace tflite {

namespace {

// What TFLM reads memplace's plan from: the model's metadata of this name.
const char kOfflinePlan[] = "OfflineMemoryAllocation";
// Field 6 of the schema's Model table: its metadata, a vector of (name, buffer) tables.
const unsigned kModelMetadata = 6;
// What the stand-in's "tensors" and bookkeeping take of the arena, at least.
const size_t kLeast = 256u;

uint32_t word(const uint8_t *at)
{
    uint32_t value;
    memcpy(&value, at, sizeof value);
    return value;
}

// Where field `field` of the flatbuffer table at `table` lies, or null when it is absent.
const uint8_t *field_of(const uint8_t *table, unsigned field)
{
    const uint8_t *vtable = table - static_cast<int32_t>(word(table));
    uint16_t vtable_size;
    memcpy(&vtable_size, vtable, sizeof vtable_size);
    if (4u + 2u * field >= vtable_size) {
        return nullptr;
    }
    uint16_t offset;
    memcpy(&offset, vtable + 4 + 2 * field, sizeof offset);
    return offset == 0 ? nullptr : table + offset;
}

const uint8_t *follow(const uint8_t *at) { return at + word(at); }

// Whether the model's metadata has an entry named `name`, as TFLM looks it up.
bool has_metadata(const uint8_t *model, const char *name)
{
    const uint8_t *metadata = field_of(follow(model), kModelMetadata);
    if (metadata == nullptr) {
        return false;
    }
    const uint8_t *entries = follow(metadata);
    for (uint32_t index = 0; index < word(entries); index++) {
        const uint8_t *entry = follow(entries + 4 + 4 * index);
        const uint8_t *text = field_of(entry, 0);
        if (text == nullptr) {
            continue;
        }
        const uint8_t *string = follow(text);
        if (word(string) == strlen(name) && memcmp(string + 4, name, strlen(name)) == 0) {
            return true;
        }
    }
    return false;
}

}  // namespace

const Model *GetModel(const void *buffer)
{
    const uint8_t *bytes = static_cast<const uint8_t *>(buffer);
    if (buffer == nullptr || memcmp(bytes + 4, "TFL3", 4) != 0) {
        return nullptr;
    }
    return reinterpret_cast<const Model *>(buffer);
}

MicroInterpreter::MicroInterpreter(const Model *model, const MicroOpResolver &op_resolver,
                                   uint8_t *tensor_arena, size_t tensor_arena_size)
    : model_(reinterpret_cast<const uint8_t *>(model)),
      resolver_(op_resolver),
      arena_(tensor_arena),
      arena_size_(tensor_arena_size)
{
}

TfLiteStatus MicroInterpreter::AllocateTensors()
{
    if (model_ == nullptr || resolver_.registered() == 0) {
        return kTfLiteError;
    }
    if (!has_metadata(model_, kOfflinePlan)) {
        return kTfLiteError;  // not a model memplace planned
    }
    if (reinterpret_cast<uintptr_t>(arena_) % 16u != 0u || arena_size_ < kLeast) {
        return kTfLiteError;
    }
    for (size_t index = 0; index < 2; index++) {
        tensors_[index].data.int8 = reinterpret_cast<int8_t *>(arena_ + 16 * index);
        tensors_[index].bytes = 1;
    }
    used_ = kLeast;
    return kTfLiteOk;
}

TfLiteStatus MicroInterpreter::Invoke()
{
    if (used_ == 0) {
        return kTfLiteError;
    }
    tensors_[1].data.int8[0] = static_cast<int8_t>(tensors_[0].data.int8[0] * 2);
    return kTfLiteOk;
}

TfLiteTensor *MicroInterpreter::input(size_t index) { return index == 0 ? &tensors_[0] : nullptr; }

TfLiteTensor *MicroInterpreter::output(size_t index) { return index == 0 ? &tensors_[1] : nullptr; }

}  // namespace tflite
