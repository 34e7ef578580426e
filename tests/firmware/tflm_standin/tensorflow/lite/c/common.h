/* Stand-in for TFLM's tensorflow/lite/c/common.h: the status and tensor types. */
#ifndef STANDIN_TFLITE_COMMON_H_
#define STANDIN_TFLITE_COMMON_H_

#include <stddef.h>
#include <stdint.h>

typedef enum { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;

typedef union {
    int8_t *int8;
    float *f;
    void *raw;
} TfLitePtrUnion;

typedef struct {
    TfLitePtrUnion data;
    size_t bytes;
} TfLiteTensor;

#endif
