"""The network the losses read: VGG19's layers by name, its weights, and the device it runs on."""
