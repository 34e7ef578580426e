/* Stand-in for TFLM's operator registry: it only counts what the application adds. */
#ifndef STANDIN_TFLITE_MICRO_MUTABLE_OP_RESOLVER_H_
#define STANDIN_TFLITE_MICRO_MUTABLE_OP_RESOLVER_H_

#include "tensorflow/lite/c/common.h"

namespace tflite {

class MicroOpResolver {
  public:
    virtual ~MicroOpResolver() = default;
    virtual unsigned registered() const = 0;
};

template <unsigned int Capacity>
class MicroMutableOpResolver : public MicroOpResolver {
  public:
    TfLiteStatus AddFullyConnected() { return Add(); }
    unsigned registered() const override { return count_; }

  private:
    TfLiteStatus Add()
    {
        if (count_ == Capacity) {
            return kTfLiteError;
        }
        count_++;
        return kTfLiteOk;
    }
    unsigned count_ = 0;
};

}  // namespace tflite

#endif
