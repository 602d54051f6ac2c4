from benchmarks import translate


def test_the_throughput_line_fills_in_every_figure():
    # The parameter counts were printed as "{zoo_params:,}": one line of the sentence lacked its f prefix.
    line = translate.throughput_line(13574.4, 10393.2, 1.3, 12_345_678, 11_000_000, 1.08, "bfloat16", 40, 4)
    assert "{" not in line and "}" not in line
    assert "11,000,000 parameters in the zoo's, 12,345,678 in the keras-hub one" in line
    assert "zoo 13574 tokens/s, keras-hub layers 10393 tokens/s, ratio **1.30x**" in line
    assert "40 steps after 10 warm-up steps, in 4 rounds" in line and line.endswith("**1.08x**.")
    assert line.startswith("Training throughput in bfloat16")
