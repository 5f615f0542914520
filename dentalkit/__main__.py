from dentalkit.cli import main

main()
