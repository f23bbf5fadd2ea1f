from qrelkit.cli import main

main(prog_name="qrelkit")
