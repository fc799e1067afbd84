import sys

from ._harness import main

main(sys.argv[1:])
