"""Memory systems memcore is compared with, all behind memcore.interfaces.MemorySystem."""
