/* TEMPORARY until the infrastructure's vk.h lands. */
#ifndef ER_VK_DROPLET_H
#define ER_VK_DROPLET_H
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "../model.h"
typedef struct er_vk_device {
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkPhysicalDeviceMemoryProperties mem;
    uint64_t max_storage_buffer_range;
    VkPhysicalDeviceType device_type;
    uint32_t steps_per_pass;
} er_vk_device;
extern const uint32_t er_vk_spv_droplet_lague[];
extern const size_t er_vk_spv_droplet_lague_size;
er_status er_vk_droplet_run(const er_vk_device *d, const er_params *p, er_terrain *t,
                            er_layers *layers, const er_run_ctl *ctl, er_budget *budget,
                            er_error *err);
#endif
