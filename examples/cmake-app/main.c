/* The application: memplace's startup code calls main() and turns its return value into
 * the exit code (under QEMU, the process's exit code). */
#include <stdint.h>

#include "memplace_runtime.h"
#include "sensor_memplace.h"

int main(void)
{
    uint8_t *samples = SENSOR_SAMPLES_PTR;
    uint8_t *filtered = SENSOR_FILTERED_PTR;
    const uint8_t *taps = SENSOR_TAPS_PTR;
    for (uint32_t i = 0; i < SENSOR_SAMPLES_SIZE; i++) {
        samples[i] = (uint8_t)(i * 7u);
    }
    for (uint32_t i = 0; i < SENSOR_FILTERED_SIZE; i++) {
        filtered[i] = (uint8_t)(samples[i] ^ taps[i % SENSOR_TAPS_SIZE]);
    }
    uint32_t energy = 0;
    for (uint32_t i = 0; i < SENSOR_FILTERED_SIZE; i++) {
        energy += filtered[i];
    }
    memplace_write("sensor: features ready\n");
    return energy == 0u ? 1 : 0;
}
