"""``arbiter-slurm``: a Slurm adapter that places and requeues jobs by arbiter's decisions."""
