/* Stand-in for the flatbuffer schema header: a model is the bytes of a .tflite file. */
#ifndef STANDIN_TFLITE_SCHEMA_H_
#define STANDIN_TFLITE_SCHEMA_H_

namespace tflite {

struct Model;

/* Null when the bytes are no TFLite flatbuffer (no "TFL3" identifier). */
const Model *GetModel(const void *buffer);

}  // namespace tflite

#endif
