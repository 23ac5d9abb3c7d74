"""Stage family mine: the best-so-far ladder, the partition into segments, and the packets an agent distils."""
