#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

#include "hello_world_int8_memplace.h"
#include "memplace_runtime.h"

extern "C" const unsigned char planned_model[];  // model.S: the model memplace wrote

extern "C" int app_main(void)
{
    static tflite::MicroMutableOpResolver<1> resolver;
    resolver.AddFullyConnected();
    // The arena memplace planned, in the pool the plan put it in.
    tflite::MicroInterpreter interpreter(tflite::GetModel(planned_model), resolver,
                                         HELLO_WORLD_INT8_TFLM_ARENA,
                                         HELLO_WORLD_INT8_TFLM_ARENA_SIZE);
    if (interpreter.AllocateTensors() != kTfLiteOk) {
        memplace_write("tflm: AllocateTensors failed\n");
        return 1;
    }
    interpreter.input(0)->data.int8[0] = 21;
    if (interpreter.Invoke() != kTfLiteOk) {
        return 2;
    }
    memplace_write("tflm: output ");
    memplace_write_u32((uint32_t)interpreter.output(0)->data.int8[0]);
    memplace_write(" arena used ");
    memplace_write_u32((uint32_t)interpreter.arena_used_bytes());
    memplace_write("\n");
    return 0;
}
