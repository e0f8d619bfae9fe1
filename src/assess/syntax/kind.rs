//! The typed vocabulary of the lowered tree: what a node is ([`Kind`]), which
//! slot of its parent it fills ([`Field`]) and, for operations, which operator
//! it applies ([`Op`]). The names (`Kind::name`) follow tree-sitter-python's
//! grammar, which the rules were first written against; they are used only to
//! print trees in tests and messages.

use ruff_python_ast::{BoolOp, Operator, UnaryOp};

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(in crate::assess) enum $name {
            $($variant,)*
        }

        impl $name {
            #[allow(dead_code)]
            pub(in crate::assess) fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

named_enum! {
    /// What a node of the lowered tree is.
    Kind {
        Module = "module",
        // statements
        FunctionDefinition = "function_definition",
        ClassDefinition = "class_definition",
        Decorator = "decorator",
        Parameters = "parameters",
        LambdaParameters = "lambda_parameters",
        DefaultParameter = "default_parameter",
        TypedDefaultParameter = "typed_default_parameter",
        TypedParameter = "typed_parameter",
        ListSplatPattern = "list_splat_pattern",
        DictionarySplatPattern = "dictionary_splat_pattern",
        Block = "block",
        ElseClause = "else_clause",
        ElifClause = "elif_clause",
        FinallyClause = "finally_clause",
        ReturnStatement = "return_statement",
        DeleteStatement = "delete_statement",
        TypeAliasStatement = "type_alias_statement",
        Assignment = "assignment",
        AugmentedAssignment = "augmented_assignment",
        ForStatement = "for_statement",
        WhileStatement = "while_statement",
        IfStatement = "if_statement",
        WithStatement = "with_statement",
        AsPattern = "as_pattern",
        AsPatternTarget = "as_pattern_target",
        MatchStatement = "match_statement",
        CaseClause = "case_clause",
        RaiseStatement = "raise_statement",
        TryStatement = "try_statement",
        ExceptClause = "except_clause",
        AssertStatement = "assert_statement",
        ImportStatement = "import_statement",
        ImportFromStatement = "import_from_statement",
        RelativeImport = "relative_import",
        DottedName = "dotted_name",
        AliasedImport = "aliased_import",
        WildcardImport = "wildcard_import",
        GlobalStatement = "global_statement",
        NonlocalStatement = "nonlocal_statement",
        ExpressionStatement = "expression_statement",
        PassStatement = "pass_statement",
        BreakStatement = "break_statement",
        ContinueStatement = "continue_statement",
        IpythonCommand = "ipython_command",
        // expressions
        Truncated = "truncated",
        BooleanOperator = "boolean_operator",
        NamedExpression = "named_expression",
        BinaryOperator = "binary_operator",
        NotOperator = "not_operator",
        UnaryOperator = "unary_operator",
        Lambda = "lambda",
        ConditionalExpression = "conditional_expression",
        Dictionary = "dictionary",
        Pair = "pair",
        DictionarySplat = "dictionary_splat",
        Set = "set",
        List = "list",
        Tuple = "tuple",
        ExpressionList = "expression_list",
        ListComprehension = "list_comprehension",
        SetComprehension = "set_comprehension",
        GeneratorExpression = "generator_expression",
        DictionaryComprehension = "dictionary_comprehension",
        ForInClause = "for_in_clause",
        IfClause = "if_clause",
        Await = "await",
        Yield = "yield",
        ListSplat = "list_splat",
        ComparisonOperator = "comparison_operator",
        Call = "call",
        ArgumentList = "argument_list",
        KeywordArgument = "keyword_argument",
        ConcatenatedString = "concatenated_string",
        String = "string",
        Interpolation = "interpolation",
        Integer = "integer",
        Float = "float",
        Complex = "complex",
        True = "true",
        False = "false",
        None = "none",
        Ellipsis = "ellipsis",
        Attribute = "attribute",
        Subscript = "subscript",
        Slice = "slice",
        Identifier = "identifier",
    }
}

named_enum! {
    /// The slot a node fills in its parent (`Field::None` for plain children).
    Field {
        None = "",
        Name = "name",
        Alias = "alias",
        Parameters = "parameters",
        ReturnType = "return_type",
        Body = "body",
        Superclasses = "superclasses",
        Left = "left",
        Right = "right",
        Type = "type",
        Condition = "condition",
        Consequence = "consequence",
        Alternative = "alternative",
        FinallyClause = "finally_clause",
        Subject = "subject",
        Guard = "guard",
        ModuleName = "module_name",
        Key = "key",
        Value = "value",
        Function = "function",
        Arguments = "arguments",
        Argument = "argument",
        Object = "object",
        Attribute = "attribute",
        Subscript = "subscript",
        Expression = "expression",
    }
}

/// The operator of a binary, boolean, unary or augmented operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::assess) enum Op {
    None,
    Bin(Operator),
    Bool(BoolOp),
    Unary(UnaryOp),
}

impl Kind {
    /// Function, lambda and class bodies open a scope of their own.
    pub(in crate::assess) fn opens_scope(self) -> bool {
        matches!(
            self,
            Kind::FunctionDefinition | Kind::Lambda | Kind::ClassDefinition
        )
    }

    /// Literal sequences whose children are their elements.
    pub(in crate::assess) fn is_sequence(self) -> bool {
        matches!(self, Kind::Tuple | Kind::ExpressionList | Kind::List)
    }
}
