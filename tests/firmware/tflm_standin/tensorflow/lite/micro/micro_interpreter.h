/* Stand-in for TFLM's MicroInterpreter: the constructor and methods an application calls. */
#ifndef STANDIN_TFLITE_MICRO_INTERPRETER_H_
#define STANDIN_TFLITE_MICRO_INTERPRETER_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

namespace tflite {

class MicroInterpreter {
  public:
    MicroInterpreter(const Model *model, const MicroOpResolver &op_resolver, uint8_t *tensor_arena,
                     size_t tensor_arena_size);
    TfLiteStatus AllocateTensors();
    TfLiteStatus Invoke();
    TfLiteTensor *input(size_t index);
    TfLiteTensor *output(size_t index);
    size_t arena_used_bytes() const { return used_; }

  private:
    const uint8_t *model_;
    const MicroOpResolver &resolver_;
    uint8_t *arena_;
    size_t arena_size_;
    size_t used_ = 0;
    TfLiteTensor tensors_[2] = {};
};

}  // namespace tflite

#endif
