/* The secure side of a TrustZone build, as small as it can be (Armv8-M baseline code, so
 * that it serves a Cortex-M23 build too): at reset (the Cortex-M33
 * boots secure) it leaves every address the implementation does not make secure to the
 * non-secure state (SAU_CTRL.ALLNS; on the MPS2 AN505 the IoT Kit keeps addresses with bit
 * 28 set secure), lets the non-secure state use the FPU, points the non-secure vector table
 * and main stack at the non-secure image's, and branches to its reset handler. The
 * non-secure image (the rest of this firmware, built with -DTRUSTZONE_NS) runs FreeRTOS's
 * non-secure port; no task calls the secure side, so none has a secure context. */
#include <stdint.h>

extern void (*const vectors[])(void); /* the non-secure image's */

__attribute__((naked, noreturn)) void Secure_Reset_Handler(void)
{
    __asm volatile("ldr r0, =0xE000EDD0\n" /* SAU_CTRL: all non-secure the IDAU leaves */
                   "movs r1, #2\n"
                   "str r1, [r0]\n"
                   "ldr r0, =0xE000ED8C\n" /* NSACR: CP10, CP11 for the non-secure state */
                   "ldr r1, [r0]\n"
                   "ldr r2, =0xC00\n"
                   "orr r1, r2\n"
                   "str r1, [r0]\n"
                   "ldr r0, =0xE000ED88\n" /* CPACR: the FPU on (where there is one) */
                   "ldr r1, [r0]\n"
                   "ldr r2, =0xF00000\n"
                   "orr r1, r2\n"
                   "str r1, [r0]\n"
                   "ldr r0, =vectors\n"
                   "ldr r1, =0xE002ED08\n" /* VTOR_NS */
                   "str r0, [r1]\n"
                   "ldr r1, [r0]\n"
                   "msr msp_ns, r1\n"
                   "ldr r0, [r0, #4]\n"
                   "movs r1, #1\n"         /* (bit 0 clear: to the non-secure state) */
                   "bic r0, r1\n"
                   "dsb\n"
                   "isb\n"
                   "blxns r0\n"
                   "b .\n");
}

void Secure_Default_Handler(void)
{
    for (;;) {
    }
}

extern uint32_t __secure_stack_top;

__attribute__((section(".secure_vectors"), used)) void (*const secure_vectors[16])(void) = {
    [0] = (void (*)(void))&__secure_stack_top,
    [1] = Secure_Reset_Handler,
    [2 ... 15] = Secure_Default_Handler,
};
