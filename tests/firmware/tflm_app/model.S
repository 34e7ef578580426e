/* The model memplace wrote (memplace tflm ... --out planned.tflite), in the image's read-only
 * data; TFLM reads flatbuffers in place, aligned to 16 bytes. */
    .section .rodata.planned_model, "a"
    .balign 16
    .global planned_model
planned_model:
    .incbin TFLM_MODEL_FILE
