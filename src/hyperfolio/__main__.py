from hyperfolio.cli import main

main()
