"""Child process supervision: own process group, stdin fed then closed, bounded group shutdown."""
