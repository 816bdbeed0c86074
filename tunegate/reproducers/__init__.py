"""Built-in reproducers: one small kernel and task per known bug of the built-in policy, named by
the rules' `reproducer` keys and run by `tunegate policy verify`."""
