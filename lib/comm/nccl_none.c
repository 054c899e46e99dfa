/*
 * erase_world_attach_device in builds without NCCL (configure found none,
 * or --without-nccl): a CPU device needs nothing; a CUDA device cannot get
 * communicators, which is ERASE_ERR_UNSUPPORTED.
 */
#include "lib/comm/comm_internal.h"

erase_status_t erase_world_attach_device(erase_device_t *dev)
{
    if (!dev)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_world_attach_device: device is NULL");
    if (!erase_world_comm())
        return ERASE_ERROR(ERASE_ERR_STATE, "erase_world_attach_device: call erase_world_init "
                           "first");
    if (erase_device_kind(dev) == ERASE_DEVICE_CPU)
        return ERASE_OK; /* the MPI communicators serve CPU streams already */
    return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "erase_world_attach_device: this build of erase "
                       "has no NCCL (configure --with-nccl): collectives on CUDA streams are not "
                       "available");
}
